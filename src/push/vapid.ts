import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';

export interface VapidKeys {
  publicKey: string;
  privateKey: string;
  subject: string;
}

/**
 * The installation's VAPID identity (RFC 8292): PARLEY_VAPID_* when set, otherwise a key pair
 * generated once into `<data>/vapid.json` (an exclusive create, so processes sharing the folder
 * agree). Browsers bind a subscription to the public key: changing it orphans every subscription.
 */
const loaded = new Map<string, VapidKeys>();

export function loadOrCreateVapidKeys(config: Config): VapidKeys {
  const key = `${config.dataDir}\n${config.vapidPublicKey ?? ''}`;
  const known = loaded.get(key);
  if (known) return known;
  const keys = readOrCreate(config);
  loaded.set(key, keys);
  return keys;
}

function readOrCreate(config: Config): VapidKeys {
  const subject = config.vapidSubject ?? (config.publicUrl?.startsWith('https:') ? config.publicUrl : 'mailto:push@localhost');
  if (config.vapidPublicKey && config.vapidPrivateKey)
    return { publicKey: config.vapidPublicKey, privateKey: config.vapidPrivateKey, subject };
  fs.mkdirSync(config.dataDir, { recursive: true });
  const file = path.join(config.dataDir, 'vapid.json');
  try {
    fs.writeFileSync(file, `${JSON.stringify(generateVapidKeys())}\n`, { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const stored = JSON.parse(fs.readFileSync(file, 'utf8')) as { publicKey?: unknown; privateKey?: unknown };
  if (typeof stored.publicKey !== 'string' || typeof stored.privateKey !== 'string')
    throw new Error(`${file} holds no VAPID keys; delete it to have new ones generated`);
  return { publicKey: stored.publicKey, privateKey: stored.privateKey, subject };
}

/**
 * A new VAPID key pair (RFC 8292): a P-256 key, the public one as its uncompressed point and the
 * private one as its 32-byte scalar, both base64url, the form `web-push` reads. Made with node:crypto
 * so that a start does not load `web-push`, which only sending needs.
 */
export function generateVapidKeys(): { publicKey: string; privateKey: string } {
  const ecdh = crypto.createECDH('prime256v1');
  ecdh.generateKeys();
  const privateKey = Buffer.alloc(32);
  const scalar = ecdh.getPrivateKey();
  scalar.copy(privateKey, 32 - scalar.length);
  return { publicKey: ecdh.getPublicKey().toString('base64url'), privateKey: privateKey.toString('base64url') };
}
