import type { Integration } from '../../api/types';
import { t } from '../../i18n';
import { CopyButton } from './common';

/**
 * The credentials each Meta integration type asks for (docs/channels/whatsapp-cloud.md,
 * messenger.md, instagram.md); `humanAgent` is the Messenger/Instagram setting for 7-day answers.
 */
export const META_FIELDS = {
  msgra_business_api: ['accessToken', 'phoneNumberId', 'wabaId', 'appSecret'],
  social1_messenger: ['pageAccessToken', 'pageId', 'appSecret'],
  // Page comments and Instagram comments take the credentials of their direct-message sibling.
  social1_group: ['pageAccessToken', 'pageId', 'appSecret'],
  photonetV3: ['accessToken', 'appSecret'],
  photonetVOff: ['accessToken', 'appSecret'],
} as const;
/** Direct-message types with the 7-day HUMAN_AGENT setting (comment types have no answer window). */
export const HUMAN_AGENT_TYPES: readonly string[] = ['social1_messenger', 'photonetV3'];
export type MetaType = keyof typeof META_FIELDS;
export const isMetaType = (type: string): type is MetaType => type in META_FIELDS;
export const SECRET_FIELDS: readonly string[] = ['accessToken', 'appSecret', 'pageAccessToken'];
export const NUMERIC_FIELDS: readonly string[] = ['phoneNumberId', 'wabaId', 'pageId'];

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
