import {
  ChannelCredentialsError,
  ChannelFailedError,
  ChannelOfflineError,
  ChannelRejectedError,
  ChannelTimeoutError,
  ChannelWebhookError,
} from './channel.js';
import { networkOf } from './networks.js';

/**
 * The failures an integration's health names (docs/api/integrations.md "Health"): a stable `code`
 * the agent app translates, and an English sentence for the owner that names the network, the
 * cause and the fix.
 */
export type HealthCode =
  | 'credentials_refused'
  | 'provider_timeout'
  | 'provider_failed'
  | 'webhook_refused'
  | 'send_refused'
  | 'bridge_offline'
  | 'session_lost';

export interface HealthError {
  code: HealthCode;
  message: string;
}

/** Provider texts are quoted at most this long; the sentence around them stays whole. */
const MAX_QUOTED = 300;

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]+/g;

/** A provider's text as a quote: one line, no control characters, cut at {@link MAX_QUOTED} characters. */
export function quoteProvider(text: string): string {
  const line = text.replace(CONTROL_CHARACTERS, ' ').replace(/\s+/g, ' ').trim();
  return line.length > MAX_QUOTED ? `${line.slice(0, MAX_QUOTED - 1)}…` : line;
}

export function credentialsRefused(type: string, reason: string): HealthError {
  const { network, credential, fix } = networkOf(type);
  return { code: 'credentials_refused', message: `${network} refused the ${credential} (${quoteProvider(reason)}): ${fix}.` };
}

export function sessionLost(type: string, reason: string | undefined): HealthError {
  const { network, fix } = networkOf(type);
  const why = reason ? ` (${quoteProvider(reason)})` : '';
  return { code: 'session_lost', message: `The ${network} account bridge lost its session${why}: ${fix}.` };
}

/**
 * A channel failure as the integration's health. `during` says what was being done: a connect
 * counts every refusal as a refusal of the credentials; a send names the message.
 */
export function healthOf(type: string, err: unknown, during: 'connect' | 'send', timeoutMs: number): HealthError {
  const { network } = networkOf(type);
  if (err instanceof ChannelCredentialsError) return credentialsRefused(type, err.reason);
  if (err instanceof ChannelWebhookError) {
    return {
      code: 'webhook_refused',
      message: `${network} refused Parley's webhook address (${quoteProvider(err.reason)}): check that PARLEY_PUBLIC_URL is a public https address, then re-register the webhook.`,
    };
  }
  if (err instanceof ChannelTimeoutError) {
    return {
      code: 'provider_timeout',
      message: `${network} did not answer in ${Math.max(1, Math.round(timeoutMs / 1000))} s: try again later.`,
    };
  }
  if (err instanceof ChannelOfflineError) {
    return { code: 'bridge_offline', message: `No ${network} account bridge is connected: ${networkOf(type).fix}.` };
  }
  if (err instanceof ChannelRejectedError) {
    if (during === 'connect') return credentialsRefused(type, err.detail());
    return { code: 'send_refused', message: `${network} refused a message (${quoteProvider(err.detail())}).` };
  }
  const cause = err instanceof ChannelFailedError && err.message ? ` (${quoteProvider(err.message)})` : '';
  return { code: 'provider_failed', message: `${network} failed to answer${cause}: try again later.` };
}
