import crypto from 'node:crypto';

/** Decoded keys by secret: a worker signs for the same few endpoints again and again. */
const keys = new Map<string, crypto.KeyObject>();
const KEYS_KEPT = 1000;

function keyOf(secret: string): crypto.KeyObject {
  let key = keys.get(secret);
  if (!key) {
    key = crypto.createSecretKey(Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64'));
    if (keys.size >= KEYS_KEPT) keys.clear();
    keys.set(secret, key);
  }
  return key;
}

/**
 * Standard Webhooks v1 headers: `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`
 * keyed with the base64-decoded secret after `whsec_`. Names and values in turn, as the sender
 * takes them; `body` is the bytes sent (one event's deliveries share them, each signs with its own
 * secret).
 */
export function signatureHeaders(secret: string, messageId: string, timestampSeconds: number, body: Buffer | string): string[] {
  const timestamp = String(timestampSeconds);
  const mac = crypto.createHmac('sha256', keyOf(secret)).update(`${messageId}.${timestamp}.`).update(body).digest('base64');
  return ['webhook-id', messageId, 'webhook-timestamp', timestamp, 'webhook-signature', `v1,${mac}`];
}
