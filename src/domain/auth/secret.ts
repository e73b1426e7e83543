import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Returns the configured secret, or the one kept in `<dataDir>/<file>`, creating it once.
 * Creation uses an exclusive open so processes sharing a data folder agree on one secret.
 */
export function loadOrCreateSecret(configured: string | undefined, dataDir: string, file: string): Uint8Array {
  if (configured) return new TextEncoder().encode(configured);
  fs.mkdirSync(dataDir, { recursive: true });
  const location = path.join(dataDir, file);
  try {
    const fresh = crypto.randomBytes(48).toString('base64url');
    fs.writeFileSync(location, `${fresh}\n`, { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const stored = fs.readFileSync(location, 'utf8').trim();
  if (stored.length < 32) throw new Error(`${location} holds no usable secret; delete it to have one generated`);
  return new TextEncoder().encode(stored);
}
