import type { VapidKeys } from './vapid.js';
import { postTo } from './http-send.js';

export interface WebPushTarget {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

/** What became of one push: delivered, the subscription is gone (remove it), or failed for now. */
export type PushOutcome = 'sent' | 'gone' | 'failed';

/**
 * Web Push (RFC 8030): `web-push` encrypts the payload for the subscription (RFC 8291,
 * aes128gcm) and signs the VAPID header (RFC 8292); the request goes out through postTo, which
 * holds the SSRF guard. 404 and 410 mean the subscription expired or was withdrawn.
 */
export async function sendWebPush(target: WebPushTarget, payload: string, vapid: VapidKeys, allowPrivate: boolean): Promise<PushOutcome> {
  const { default: webpush } = await import('web-push');
  const details = webpush.generateRequestDetails({ endpoint: target.endpoint, keys: target.keys }, payload, {
    vapidDetails: { subject: vapid.subject, publicKey: vapid.publicKey, privateKey: vapid.privateKey },
    TTL: 24 * 3600,
    urgency: 'high',
    contentEncoding: 'aes128gcm',
  });
  const res = await postTo(details.endpoint, details.headers as Record<string, string>, details.body as Buffer, allowPrivate);
  if (res.status === 404 || res.status === 410) return 'gone';
  return res.status >= 200 && res.status < 300 ? 'sent' : 'failed';
}
