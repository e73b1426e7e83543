import crypto from 'node:crypto';
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import { cacheTotals, measureCache } from '../../metrics/cache-stats.js';
import type { Clock } from '../clock.js';
import { unauthorized } from '../errors.js';

export type TokenType = 'access' | 'refresh' | 'plugin' | 'api' | 'oauth';
const TOKEN_TYPES: ReadonlySet<string> = new Set(['access', 'refresh', 'plugin', 'api', 'oauth']);

export interface TokenClaims {
  sub: number;
  accountId: number;
  typ: TokenType;
  jti: string;
  /** Unix seconds. */
  iat: number;
  exp?: number;
  /** Access tokens of `typ: plugin`: the plugin that obtained them (claim `pid`), so deleting it ends them. */
  pluginId?: number;
  /**
   * The user's token generation when the token was issued (claim `gen`; 0 when absent, as in tokens
   * made before it existed). A password reset, sign-out everywhere or removal moves the user's
   * generation on, which ends every token of an earlier one whatever its `iat`.
   */
  gen: number;
  /** Access tokens of `typ: oauth`: the grant they were issued from (claim `gid`) and its scopes (claim `scope`). */
  grantId?: number;
  scope?: string;
}

/** Claims beyond the standard ones, by token type. */
export interface ExtraClaims {
  pluginId?: number;
  gen?: number;
  grantId?: number;
  scope?: string;
}

/** The Token object (docs/api/resources.md): `exp` in Unix seconds. */
export interface IssuedToken {
  token: string;
  exp: number;
  jti: string;
}

const VERIFIED_CACHE_SIZE = 1000;

/** HS256 JWTs with the claims of docs/api/auth.md, on an injectable clock. */
export class TokenSigner {
  constructor(
    private readonly secret: Uint8Array,
    private readonly clock: Clock,
  ) {
    // A token's text and its claims: ~1 KB each at most.
    measureCache('verified_tokens', this.verified, (map) => ({ entries: map.size, bytes: map.size * 1024 }));
  }

  /** `ttlSeconds` null issues a token without expiry (API keys: revocable, never expiring). */
  async sign(sub: number, accountId: number, typ: TokenType, ttlSeconds: number | null, extra: ExtraClaims = {}): Promise<IssuedToken> {
    const iat = Math.floor(this.clock.now() / 1000);
    const jti = crypto.randomUUID();
    const claims: Record<string, unknown> = { accountId, typ };
    if (extra.pluginId !== undefined) claims.pid = extra.pluginId;
    if (extra.gen) claims.gen = extra.gen;
    if (extra.grantId !== undefined) claims.gid = extra.grantId;
    if (extra.scope !== undefined) claims.scope = extra.scope;
    const jwt = new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setSubject(String(sub)).setJti(jti).setIssuedAt(iat);
    const exp = ttlSeconds === null ? 0 : iat + ttlSeconds;
    if (ttlSeconds !== null) jwt.setExpirationTime(exp);
    return { token: await jwt.sign(this.secret), exp, jti };
  }

  /**
   * Claims of tokens verified before, by token text, until they expire (the HMAC check
   * was ~30% of a small API request). Only verification is skipped: revocation (user, API key,
   * plugin) is still checked by the caller on every request. Bounded; oldest entries go first.
   */
  private readonly verified = new Map<string, TokenClaims>();
  private readonly counted = cacheTotals('verified_tokens');

  /** Verifies signature, expiry and claim shapes; any failure is a 401. */
  async verify(token: string): Promise<TokenClaims> {
    const known = this.verified.get(token);
    if (known && (known.exp === undefined || known.exp * 1000 > this.clock.now())) {
      this.counted.hits++;
      return known;
    }
    this.counted.misses++;
    if (known) this.verified.delete(token);
    const claims = await this.verifyOnce(token);
    if (this.verified.size >= VERIFIED_CACHE_SIZE) this.verified.delete(this.verified.keys().next().value as string);
    this.verified.set(token, claims);
    return claims;
  }

  private async verifyOnce(token: string): Promise<TokenClaims> {
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, this.secret, {
        algorithms: ['HS256'],
        currentDate: new Date(this.clock.now()),
      }));
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired) throw unauthorized('Token expired');
      throw unauthorized('Invalid token');
    }
    const sub = Number(payload.sub);
    const { accountId, typ, jti, iat, exp, pid, gen = 0, gid, scope } = payload;
    if (
      !Number.isSafeInteger(sub) ||
      typeof accountId !== 'number' ||
      typeof typ !== 'string' ||
      !TOKEN_TYPES.has(typ) ||
      typeof jti !== 'string' ||
      typeof iat !== 'number' ||
      !Number.isSafeInteger(gen)
    ) {
      throw unauthorized('Invalid token');
    }
    return {
      sub,
      accountId,
      typ: typ as TokenType,
      jti,
      iat,
      exp: typeof exp === 'number' ? exp : undefined,
      pluginId: typeof pid === 'number' ? pid : undefined,
      gen: gen as number,
      grantId: typeof gid === 'number' ? gid : undefined,
      scope: typeof scope === 'string' ? scope : undefined,
    };
  }
}

export function sha256(text: string): string {
  return crypto.createHash('sha256').update(text).digest('hex');
}

/**
 * The token of an `Authorization` header: `Bearer <jwt>` (scheme in any case), `JWT <jwt>` or the
 * bare `<jwt>`. Anything else is undefined.
 */
export function tokenFromHeader(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^\s*(?:(?:bearer|jwt)\s+)?([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)\s*$/i.exec(header);
  return match?.[1];
}
