import crypto from 'node:crypto';

/**
 * Integration credentials at rest: AES-256-GCM with a fresh random 96-bit IV for every value
 * sealed, and an authentication tag, so a changed or moved ciphertext fails to open. The AES key
 * is derived (HKDF-SHA256) from the installation's encryption secret: `PARLEY_ENCRYPTION_KEY`,
 * or one generated once and kept in the data folder.
 *
 * Stored form: `v1.<keyId>.<iv>.<tag>.<ciphertext>` (base64url parts). `keyId` is a short
 * fingerprint of the key, so a value sealed under another key is reported as such instead of
 * as corrupt data.
 */
export class CredentialsCipher {
  private readonly key: Buffer;
  private readonly keyId: string;
  /**
   * Credentials opened, by account and stored value: every provider call and delivery of an
   * integration opens the same value (docs/performance.md). The key
   * that opens them is in this process's memory anyway. A value sealed anew is another entry.
   */
  private readonly opened = new Map<string, Readonly<Record<string, string>>>();

  constructor(secret: Uint8Array) {
    if (secret.byteLength < 32) throw new Error('The encryption secret must be at least 32 bytes long');
    this.key = Buffer.from(crypto.hkdfSync('sha256', secret, Buffer.alloc(0), 'parley integration credentials v1', 32));
    this.keyId = crypto.createHash('sha256').update(this.key).digest('base64url').slice(0, 8);
  }

  /** Encrypts `plain`; `context` (the owner of the value, e.g. the account) is authenticated too. */
  seal(plain: string, context: string): string {
    const iv = crypto.randomBytes(12);
    const cipher = crypto.createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return ['v1', this.keyId, iv.toString('base64url'), tag.toString('base64url'), body.toString('base64url')].join('.');
  }

  open(stored: string, context: string): string {
    const parts = stored.split('.');
    if (parts.length !== 5 || parts[0] !== 'v1') throw new CredentialsUnreadableError('not an encrypted value');
    const [, keyId, iv, tag, body] = parts as [string, string, string, string, string];
    if (keyId !== this.keyId) {
      throw new CredentialsUnreadableError('sealed with another encryption key (was PARLEY_ENCRYPTION_KEY changed?)');
    }
    try {
      const decipher = crypto.createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new CredentialsUnreadableError('authentication failed (tampered or moved value)');
    }
  }

  sealCredentials(credentials: Record<string, string>, accountId: number): string {
    return this.seal(JSON.stringify(credentials), contextOf(accountId));
  }

  /** The credentials of `stored`, sealed for the account `accountId`; each caller gets its own copy. */
  openCredentials(stored: string | null, accountId: number): Record<string, string> {
    if (stored === null || stored === '') return {};
    const key = `${accountId}.${stored}`;
    let credentials = this.opened.get(key);
    if (!credentials) {
      const parsed: unknown = JSON.parse(this.open(stored, contextOf(accountId)));
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        throw new CredentialsUnreadableError('not a credentials object');
      }
      credentials = Object.freeze(
        Object.fromEntries(Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === 'string')),
      );
      if (this.opened.size >= MAX_OPENED) this.opened.delete(this.opened.keys().next().value as string);
      this.opened.set(key, credentials);
    }
    return { ...credentials };
  }
}

/** At most this many opened values are kept, the oldest forgotten first. */
const MAX_OPENED = 10_000;

/** Binding the account into the tag: a ciphertext copied to another account's row does not open. */
const contextOf = (accountId: number) => `parley:integration-credentials:account:${accountId}`;

export class CredentialsUnreadableError extends Error {
  constructor(reason: string) {
    super(`Integration credentials cannot be read: ${reason}`);
    this.name = 'CredentialsUnreadableError';
  }
}
