import type { Integration } from '../api/types';
import { formatTime, t } from '../i18n';
import type { MessageKey } from '../i18n/en';
import { channelName } from './ChannelName';

type Health = NonNullable<Integration['health']>;

/** The app's own text for each health code (docs/api/integrations.md "Health"); the server's sentence stays English. */
const HEALTH_TEXT: Record<string, MessageKey> = {
  credentials_refused: 'channels.health.credentials_refused',
  provider_timeout: 'channels.health.provider_timeout',
  provider_failed: 'channels.health.provider_failed',
  webhook_refused: 'channels.health.webhook_refused',
  send_refused: 'channels.health.send_refused',
  bridge_offline: 'channels.health.bridge_offline',
  session_lost: 'channels.health.session_lost',
};

const MODE_TEXT: Record<string, MessageKey> = {
  webhook: 'channels.mode.webhook',
  polling: 'channels.mode.polling',
  bridge: 'channels.mode.bridge',
  widget: 'channels.mode.widget',
};

/** The last error in the app's words, for the channel card and the conversation. */
export function healthProblem(type: string, health: Health | undefined): string | null {
  const error = health?.lastError;
  if (!error) return null;
  return t(HEALTH_TEXT[error.code] ?? 'channels.health.unknown', { channel: channelName(type) });
}

/** A channel's health: its last error (with what the server recorded), how it receives, and its last messages. */
export function ChannelHealth({ integration }: { integration: Integration }) {
  const { health } = integration;
  if (!health) return null;
  const problem = healthProblem(integration.type, health);
  const when = (ms: number | null) => (ms === null ? t('channels.health.never') : formatTime(ms));
  return (
    <div className="stack small" data-health>
      {problem && health.lastError && (
        <div role="alert" className="error" data-health-error={health.lastError.code}>
          <p>{problem}</p>
          <details>
            <summary>{t('channels.health.said')}</summary>
            {/* Plain text: a provider's words never become markup. */}
            <p className="muted">{health.lastError.message}</p>
          </details>
        </div>
      )}
      <p className="muted">
        {t(MODE_TEXT[health.mode] ?? 'channels.mode.webhook')} · {t('channels.health.lastIn', { time: when(health.lastInboundAt) })} ·{' '}
        {t('channels.health.lastOut', { time: when(health.lastOutboundAt) })}
      </p>
    </div>
  );
}
