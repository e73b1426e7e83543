import type { Integration } from '../../api/types';
import { t } from '../../i18n';
import { CopyButton } from './common';

/** Direct-message types with the 7-day HUMAN_AGENT setting (comment types have no answer window). */
export const HUMAN_AGENT_TYPES: readonly string[] = ['social1_messenger', 'photonetV3'];

/** What the owner pastes into the Meta app's webhook settings, with copy buttons. */
export function MetaWebhook({ webhook }: { webhook: NonNullable<Integration['webhook']> }) {
  return (
    <div className="stack small" data-meta-webhook>
      <p className="muted">{t('wa.webhookHint')}</p>
      <div className="row wrap">
        <span>{t('wa.callbackUrl')}</span>
        <code>{webhook.url ?? t('wa.noPublicUrl')}</code>
        {webhook.url && <CopyButton text={webhook.url} />}
      </div>
      <div className="row wrap">
        <span>{t('wa.verifyToken')}</span>
        <code>{webhook.verifyToken}</code>
        <CopyButton text={webhook.verifyToken} />
      </div>
    </div>
  );
}
