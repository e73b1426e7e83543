import crypto from 'node:crypto';
import type { OAuthAppRow } from '../../db/schema.js';
import type { Deps } from '../context.js';
import { sha256, type TokenSigner } from '../auth/token-signer.js';
import { findUser } from '../users/users.repo.js';
import { OAUTH_SCOPES } from '../policy/policy.js';
import * as repo from './oauth.repo.js';
import { oauthLibrary } from './oauth-library.js';

/** Authorization codes live one minute: they are exchanged by the app right after the redirect. */
export const CODE_TTL_MS = 60_000;

/** What the library calls a client: one of our apps. */
export interface OAuthClient {
  id: string;
  appId: number;
  accountId: number;
  name: string;
  confidential: boolean;
  redirectUris: string[];
  grants: string[];
}

/** What the library calls a user: the consenting employee, and the grant a code or token belongs to. */
export interface OAuthUser {
  id: number;
  accountId: number;
  role: string;
  grantId?: number;
  /** The employee's token generation (see TokenClaims.gen): an app's access tokens end with a sign-out everywhere too. */
  generation?: number;
}

export function toClient(app: OAuthAppRow): OAuthClient {
  return {
    id: app.client_id,
    appId: app.id,
    accountId: app.account_id,
    name: app.name,
    confidential: app.secret_hash !== null,
    redirectUris: JSON.parse(app.redirect_uris) as string[],
    grants: ['authorization_code', 'refresh_token'],
  };
}

export function secretMatches(app: OAuthAppRow, secret: string): boolean {
  if (app.secret_hash === null) return false;
  const a = Buffer.from(app.secret_hash, 'hex');
  const b = Buffer.from(sha256(secret), 'hex');
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}

/**
 * The scopes an employee may grant: known ones only, `admin` only from an owner; none asked means
 * `read`. Falsy (invalid_scope) otherwise.
 */
export function grantableScopes(role: string, requested: string[] | undefined): string[] | false {
  const scopes = requested?.length ? [...new Set(requested)] : ['read'];
  for (const s of scopes) {
    if (!(OAUTH_SCOPES as readonly string[]).includes(s)) return false;
    if (s === 'admin' && role !== 'owner') return false;
  }
  return scopes;
}

/**
 * The storage side of @node-oauth/oauth2-server (it runs the protocol: request checks, PKCE,
 * redirect URI matching, scope narrowing on refresh). Codes and refresh tokens are kept only as
 * hashes; expiry is judged on deps.clock (the library's own checks are against the wall clock, so
 * the dates handed back to it are translated). A code or refresh token presented again after use
 * revokes its grant: everything issued from that consent.
 */
export class OAuthModel {
  constructor(
    private readonly deps: Deps,
    private readonly signer: TokenSigner,
    /** Token requests check the client's secret; the consent step only names the client. */
    private readonly checkSecret: boolean,
  ) {}

  private get db() {
    return this.deps.db.kysely;
  }

  async getClient(clientId: string, clientSecret: string | null | undefined): Promise<OAuthClient | false> {
    const app = await repo.findAppByClientId(this.db, clientId);
    if (!app) return false;
    if (this.checkSecret) {
      // A confidential app must authenticate; a public one cannot (it has no secret).
      if (app.secret_hash !== null ? !clientSecret || !secretMatches(app, clientSecret) : !!clientSecret) return false;
    }
    return toClient(app);
  }

  async validateScope(user: OAuthUser, _client: OAuthClient, scope?: string[]): Promise<string[] | false> {
    return grantableScopes(user.role, scope);
  }

  async saveAuthorizationCode(
    code: {
      authorizationCode: string;
      expiresAt: Date;
      redirectUri: string;
      scope?: string[];
      codeChallenge?: string;
      codeChallengeMethod?: string;
    },
    client: OAuthClient,
    user: OAuthUser,
  ) {
    if (!client.confidential && !code.codeChallenge) {
      const { InvalidRequestError } = await oauthLibrary();
      throw new InvalidRequestError('Missing parameter: `code_challenge` (PKCE with S256 is required for public clients)');
    }
    const now = this.deps.clock.now();
    const scope = code.scope ?? ['read'];
    const grant = await this.db.transaction().execute(async (trx) => {
      const g = await repo.insertGrant(trx, {
        account_id: user.accountId,
        app_id: client.appId,
        user_id: user.id,
        scope: scope.join(' '),
        created_at: now,
      });
      await repo.insertCode(trx, {
        code_hash: sha256(code.authorizationCode),
        grant_id: g.id,
        redirect_uri: code.redirectUri,
        code_challenge: code.codeChallenge ?? null,
        code_challenge_method: code.codeChallenge ? (code.codeChallengeMethod ?? 'S256') : null,
        expires_at: now + CODE_TTL_MS,
      });
      return g;
    });
    return { ...code, scope, client, user: { ...user, grantId: grant.id } };
  }

  async getAuthorizationCode(authorizationCode: string) {
    const now = this.deps.clock.now();
    const code = await repo.findCodeByHash(this.db, sha256(authorizationCode));
    if (!code) return false;
    const grant = await repo.findGrant(this.db, code.grant_id);
    if (!grant || grant.revoked_at !== null) return false;
    if (code.used_at !== null) {
      // RFC 6749 §4.1.2: a code used twice revokes the tokens issued from it.
      await repo.revokeGrant(this.db, grant.id, now);
      this.deps.log.warn({ grantId: grant.id }, 'oauth code reuse: grant revoked');
      return false;
    }
    if (code.expires_at <= now) return false;
    const found = await this.clientAndUser(grant);
    if (!found) return false;
    return {
      authorizationCode,
      expiresAt: new Date(Date.now() + (code.expires_at - now)),
      redirectUri: code.redirect_uri,
      scope: grant.scope.split(' '),
      codeChallenge: code.code_challenge ?? undefined,
      codeChallengeMethod: code.code_challenge_method ?? undefined,
      codeId: code.id,
      ...found,
    };
  }

  async revokeAuthorizationCode(code: { codeId: number }): Promise<boolean> {
    return repo.useCode(this.db, code.codeId, this.deps.clock.now());
  }

  async generateAccessToken(_client: OAuthClient, user: OAuthUser, scope: string[]): Promise<string> {
    const issued = await this.signer.sign(user.id, user.accountId, 'oauth', this.deps.config.accessTtl, {
      grantId: user.grantId,
      gen: user.generation,
      scope: scope.join(' '),
    });
    return issued.token;
  }

  async saveToken(
    token: { accessToken: string; accessTokenExpiresAt?: Date; refreshToken?: string; refreshTokenExpiresAt?: Date; scope?: string[] },
    client: OAuthClient,
    user: OAuthUser,
  ) {
    const now = this.deps.clock.now();
    const scope = token.scope ?? ['read'];
    if (token.refreshToken && user.grantId !== undefined) {
      await repo.insertRefreshToken(this.db, {
        token_hash: sha256(token.refreshToken),
        grant_id: user.grantId,
        scope: scope.join(' '),
        expires_at: now + this.deps.config.refreshTtl * 1000,
        created_at: now,
      });
    }
    return { ...token, scope, client, user };
  }

  async getRefreshToken(refreshToken: string) {
    const now = this.deps.clock.now();
    const row = await repo.findRefreshTokenByHash(this.db, sha256(refreshToken));
    if (!row) return false;
    if (row.revoked_at !== null) {
      // Rotation makes every refresh token single-use: a second presentation means it leaked.
      await repo.revokeGrant(this.db, row.grant_id, now);
      this.deps.log.warn({ grantId: row.grant_id }, 'oauth refresh token reuse: grant revoked');
      return false;
    }
    if (row.expires_at <= now) return false;
    const grant = await repo.findGrant(this.db, row.grant_id);
    if (!grant || grant.revoked_at !== null) return false;
    const found = await this.clientAndUser(grant);
    if (!found) return false;
    return { refreshToken, scope: row.scope.split(' '), tokenId: row.id, grantId: grant.id, ...found };
  }

  /** Rotation: the presented refresh token is spent. Losing a race to a concurrent rotation is a replay. */
  async revokeToken(token: { tokenId: number; grantId: number }): Promise<boolean> {
    const now = this.deps.clock.now();
    if (await repo.revokeRefreshToken(this.db, token.tokenId, now)) return true;
    await repo.revokeGrant(this.db, token.grantId, now);
    return false;
  }

  /** Access tokens are verified by AuthService (they are our JWTs); the library never asks. */
  async getAccessToken(): Promise<false> {
    return false;
  }

  private async clientAndUser(grant: { id: number; app_id: number; user_id: number; account_id: number }) {
    const app = await repo.findApp(this.db, grant.app_id);
    const user = await findUser(this.db, grant.account_id, grant.user_id);
    if (!app || !user?.confirmed) return undefined;
    return {
      client: toClient(app),
      user: {
        id: user.id,
        accountId: user.account_id,
        role: user.role,
        grantId: grant.id,
        generation: Number(user.token_generation),
      } satisfies OAuthUser,
    };
  }
}
