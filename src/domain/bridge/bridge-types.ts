import crypto from 'node:crypto';

/**
 * Integration types served by an account bridge (docs/channels/bridge.md): personal accounts no
 * official API serves. Parley ships connectors for some (`parley bridge ...`); the others are
 * "bring your own bridge" over the same protocol.
 */
export const BRIDGE_TYPES = ['msgra', 'msgra2', 'msgrb_personal', 'social2_personal', 'photonetV2'] as const;

export function isBridgeType(type: string): boolean {
  return (BRIDGE_TYPES as readonly string[]).includes(type);
}

/** A bridge token: `pbt_` + 256 random bits. Only its SHA-256 is stored. */
export function newBridgeToken(): string {
  return `pbt_${crypto.randomBytes(32).toString('base64url')}`;
}

export function hashBridgeToken(token: string): string {
  return crypto.createHash('sha256').update(token).digest('hex');
}

/** Constant-time comparison of a presented token with a stored hash. */
export function bridgeTokenMatches(token: string, storedHash: string): boolean {
  const a = Buffer.from(hashBridgeToken(token), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}

/** The connector command Parley ships for a type, or undefined ("bring your own bridge"). */
export function connectorCommand(type: string, base: string, integrationId: number, token: string): string | undefined {
  const connector = CONNECTORS[type];
  if (!connector) return undefined;
  // WhatsApp: the connector refuses to start until the operator accepts the risk of a ban (bridge.md).
  const extra = connector === 'telegram' ? ' --api-id <id> --api-hash <hash>' : connector === 'whatsapp' ? ' --accept-risk' : '';
  return `npx parley bridge ${connector} --url ${base || 'http://<parley>'} --integration ${integrationId} --token ${token}${extra}`;
}

/** Connectors shipped as `parley bridge <name>` (src/connectors/), by integration type. */
export const CONNECTORS: Record<string, string> = { msgrb_personal: 'telegram', msgra: 'whatsapp', msgra2: 'whatsapp' };
