import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { importJWK, jwtVerify } from 'jose';

/**
 * A Web Push service on loopback (RFC 8030) that checks what a real one checks and reads what a
 * browser would: the VAPID authorization (RFC 8292: `vapid t=<ES256 JWT>, k=<public key>`, audience
 * = the endpoint's origin, a contact `sub`, expiry within 24 h) and the payload, decrypted with the
 * subscription's private key and auth secret (RFC 8291, aes128gcm; written here from the RFCs).
 */
export interface ReceivedPush {
  subscriptionId: string;
  payload: unknown;
  vapidKey: string;
  ttl: string | undefined;
  urgency: string | undefined;
}

export interface FakeSubscription {
  id: string;
  /** What a browser's PushSubscription.toJSON() answers. */
  json: { endpoint: string; keys: { p256dh: string; auth: string } };
}

export interface FakeWebPush {
  base: string;
  received: ReceivedPush[];
  /** Requests refused (bad VAPID, undecryptable payload), with the reason. */
  refused: string[];
  subscribe(): FakeSubscription;
  /** The subscription expires: the service answers 410 Gone from now on. */
  expire(id: string): void;
  close(): Promise<void>;
}

const b64u = (b: Buffer) => b.toString('base64url');

export async function startFakeWebPush(): Promise<FakeWebPush> {
  const subs = new Map<string, { ecdh: crypto.ECDH; auth: Buffer; gone: boolean }>();
  const received: ReceivedPush[] = [];
  const refused: string[] = [];
  let base = '';

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void handle(req, Buffer.concat(chunks)).then(
        ([status, text]) => res.writeHead(status).end(text),
        (err: Error) => {
          refused.push(err.message);
          res.writeHead(400).end(err.message);
        },
      );
    });
  });

  async function handle(req: http.IncomingMessage, body: Buffer): Promise<[number, string]> {
    const id = /^\/push\/([\w-]+)$/.exec(req.url ?? '')?.[1];
    const sub = id ? subs.get(id) : undefined;
    if (req.method !== 'POST' || !sub || !id) return [404, 'no such subscription'];
    if (sub.gone) return [410, 'gone'];
    const vapidKey = await checkVapid(req.headers.authorization, base);
    if (req.headers['content-encoding'] !== 'aes128gcm') throw new Error('content-encoding must be aes128gcm');
    const plaintext = decrypt(body, sub.ecdh, sub.auth);
    received.push({
      subscriptionId: id,
      payload: JSON.parse(plaintext.toString('utf8')),
      vapidKey,
      ttl: req.headers.ttl as string | undefined,
      urgency: req.headers.urgency as string | undefined,
    });
    return [201, ''];
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    received,
    refused,
    subscribe() {
      const id = crypto.randomUUID();
      const ecdh = crypto.createECDH('prime256v1');
      ecdh.generateKeys();
      const auth = crypto.randomBytes(16);
      subs.set(id, { ecdh, auth, gone: false });
      return { id, json: { endpoint: `${base}/push/${id}`, keys: { p256dh: b64u(ecdh.getPublicKey()), auth: b64u(auth) } } };
    },
    expire(id) {
      subs.get(id)!.gone = true;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** RFC 8292 §2-3: `vapid t=<jwt>, k=<key>`; the JWT signed by that key, for this origin. Answers the key. */
async function checkVapid(header: string | undefined, origin: string): Promise<string> {
  const m = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(header ?? '');
  if (!m) throw new Error(`bad Authorization header: ${header}`);
  const [, jwt, k] = m as unknown as [string, string, string];
  const point = Buffer.from(k, 'base64url');
  if (point.length !== 65 || point[0] !== 4) throw new Error('k is not an uncompressed P-256 point');
  const key = await importJWK({ kty: 'EC', crv: 'P-256', x: b64u(point.subarray(1, 33)), y: b64u(point.subarray(33)) }, 'ES256');
  const { payload } = await jwtVerify(jwt, key, { algorithms: ['ES256'], audience: origin });
  if (typeof payload.exp !== 'number' || payload.exp > Date.now() / 1000 + 24 * 3600) throw new Error('exp missing or beyond 24 hours');
  if (typeof payload.sub !== 'string' || !/^(mailto:|https:)/.test(payload.sub)) throw new Error('sub must be a mailto: or https: contact');
  return k;
}

/** RFC 8291 §3.4 and RFC 8188 §2: one aes128gcm record. */
function decrypt(body: Buffer, ecdh: crypto.ECDH, authSecret: Buffer): Buffer {
  const salt = body.subarray(0, 16);
  const idlen = body[20]!;
  const asPublic = body.subarray(21, 21 + idlen);
  const ciphertext = body.subarray(21 + idlen);
  const uaPublic = ecdh.getPublicKey();
  const shared = ecdh.computeSecret(asPublic);
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), uaPublic, asPublic]);
  const ikm = Buffer.from(crypto.hkdfSync('sha256', shared, authSecret, keyInfo, 32));
  const cek = Buffer.from(crypto.hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: aes128gcm\0'), 16));
  const nonce = Buffer.from(crypto.hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: nonce\0'), 12));
  const decipher = crypto.createDecipheriv('aes-128-gcm', cek, nonce);
  decipher.setAuthTag(ciphertext.subarray(ciphertext.length - 16));
  const padded = Buffer.concat([decipher.update(ciphertext.subarray(0, ciphertext.length - 16)), decipher.final()]);
  // The last record ends with the delimiter 0x02 and zero padding.
  let end = padded.length - 1;
  while (end >= 0 && padded[end] === 0) end--;
  if (padded[end] !== 2) throw new Error('missing last-record delimiter');
  return padded.subarray(0, end);
}
