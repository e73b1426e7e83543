import crypto from 'node:crypto';
import type { UserRow } from '../../db/schema.js';
import type { Deps } from '../context.js';
import { forbidden, notFound, rateLimited, unauthorized } from '../errors.js';
import { findUserByLogin } from '../users/users.repo.js';
import { normalizeLogin } from '../users/users.types.js';
import type { AccountsService, NewAccountInput } from '../accounts/accounts.service.js';
import { verifyPassword } from './passwords.js';
import { RateLimiter } from './rate-limiter.js';
import { sha256, type IssuedToken, type TokenClaims, type TokenSigner } from './token-signer.js';
import * as tokens from './tokens.repo.js';
import { isPluginActive } from '../plugins/plugins.repo.js';
import { isGrantActive } from '../oauth/oauth.repo.js';
import { announceSessionsEnded } from './sessions-signal.js';
import { generationOf, type AuthContext } from './auth-context.js';
import { UserCache } from './user-cache.js';

export interface TokenObject {
  token: string;
  exp: number;
}

export interface TokenPair {
  accessToken: TokenObject;
  refreshToken: TokenObject;
}

const WRONG_CREDENTIALS = 'Wrong login or password';

export class AuthService {
  private readonly perIp: RateLimiter;
  private readonly perLogin: RateLimiter;
  /** Employees' rows for the token check of every request (kept on PostgreSQL). */
  readonly users: UserCache;

  constructor(
    private readonly deps: Deps,
    private readonly signer: TokenSigner,
    private readonly accounts: AccountsService,
  ) {
    const windowMs = deps.config.loginWindowSeconds * 1000;
    this.users = new UserCache(deps.db);
    this.perIp = RateLimiter.for(deps, 'login-ip', deps.config.loginMaxPerIp, windowMs);
    this.perLogin = RateLimiter.for(deps, 'login-failures', deps.config.loginMaxFailuresPerLogin, windowMs);
  }

  /**
   * Every attempt counts against the IP; failures count against the login. A locked login stays
   * locked even for the right password until its window ends: that is what stops guessing.
   */
  async login(loginInput: string, pass: string, ip: string): Promise<TokenPair> {
    const login = normalizeLogin(loginInput);
    const ipWait = await this.perIp.hit(ip);
    if (ipWait) throw rateLimited(ipWait, 'Too many login attempts');
    const loginWait = await this.perLogin.retryAfter(login);
    if (loginWait) throw rateLimited(loginWait, 'Too many failed logins for this account');

    const user = await findUserByLogin(this.deps.db.kysely, login);
    const ok = await verifyPassword(user?.password_hash, pass);
    if (!user || !ok || !user.confirmed) {
      await this.perLogin.hit(login);
      throw unauthorized(WRONG_CREDENTIALS);
    }
    await this.perLogin.reset(login);
    return this.issuePair(user);
  }

  /** First account always; later ones only when sign-up is open. Answers like login. */
  async register(input: NewAccountInput, ip: string): Promise<TokenPair> {
    const wait = await this.perIp.hit(ip);
    if (wait) throw rateLimited(wait, 'Too many attempts');
    const owner = await this.accounts.createWithOwner(input, {
      onlyIfFirst: this.deps.config.signup !== 'open',
    });
    return this.issuePair(owner);
  }

  /** A new login session: an access token and the first refresh token of a new family. */
  async issuePair(user: UserRow, familyId: string = crypto.randomUUID()): Promise<TokenPair> {
    const access = await this.signAccess(user);
    const refresh = await this.issueRefresh(user, familyId);
    return { accessToken: tokenObject(access), refreshToken: tokenObject(refresh) };
  }

  /**
   * docs/api/auth.md: the refresh token rotates once less than half of its life is left (both tokens
   * answered, the old one revoked); otherwise only a new access token. A revoked refresh token
   * presented again revokes its whole family.
   */
  async refresh(raw: string): Promise<{ accessToken: TokenObject; refreshToken?: TokenObject }> {
    const claims = await this.signer.verify(raw);
    if (claims.typ !== 'refresh') throw unauthorized('A refresh token is required');
    const db = this.deps.db.kysely;
    const now = this.deps.clock.now();
    const row = await tokens.findRefreshToken(db, claims.jti);
    if (!row || row.token_hash !== sha256(raw) || row.user_id !== claims.sub) {
      throw unauthorized('Invalid refresh token');
    }
    if (row.revoked_at !== null) {
      await tokens.revokeFamily(db, row.family_id, now);
      this.deps.log.warn({ userId: row.user_id, family: row.family_id }, 'refresh token reuse: family revoked');
      throw unauthorized('Refresh token was already used');
    }
    if (row.expires_at <= now) throw unauthorized('Token expired');
    const user = await this.activeUser(claims);

    const access = await this.signAccess(user);
    const lifetime = row.expires_at - row.created_at;
    if (row.expires_at - now >= lifetime / 2) return { accessToken: tokenObject(access) };

    // Revoking the old token and storing its successor commit together: a concurrent presentation
    // of the same token waits on the old row's lock (PostgreSQL) or behind the transaction (SQLite),
    // finds it revoked, and its family revocation then sees — and revokes — the successor too.
    const refresh = await this.signer.sign(user.id, user.account_id, 'refresh', this.deps.config.refreshTtl, { gen: generationOf(user) });
    const rotated = await db.transaction().execute(async (trx) => {
      if (!(await tokens.revokeRefreshToken(trx, row.id, now))) return false;
      await tokens.insertRefreshToken(trx, this.refreshRow(user, row.family_id, refresh, now));
      return true;
    });
    if (!rotated) {
      // A concurrent call rotated it first: this presentation is a reuse.
      await tokens.revokeFamily(db, row.family_id, now);
      throw unauthorized('Refresh token was already used');
    }
    return { accessToken: tokenObject(access), refreshToken: tokenObject(refresh) };
  }

  /** Resolves a bearer token to who it acts as; every failure is the same 401. */
  async authenticate(raw: string): Promise<AuthContext> {
    const claims = await this.signer.verify(raw);
    if (claims.typ === 'refresh') throw unauthorized('A refresh token cannot authorize requests');
    if (claims.typ === 'api') {
      const key = await tokens.findApiKeyByJti(this.deps.db.kysely, claims.jti);
      if (!key || key.revoked_at !== null || key.account_id !== claims.accountId) {
        throw unauthorized('API key revoked');
      }
    } else if (claims.exp === undefined) {
      throw unauthorized('Invalid token');
    }
    // A plugin's access tokens end with the plugin (docs/api/integrations.md): they name it in `pid`.
    if (claims.typ === 'plugin' && !(await isPluginActive(this.deps.db.kysely, claims.accountId, claims.pluginId))) {
      throw unauthorized('Plugin revoked');
    }
    // An OAuth 2 token ends with its grant (revoked, replayed code or refresh token, app or employee deleted).
    if (
      claims.typ === 'oauth' &&
      (claims.grantId === undefined || !(await isGrantActive(this.deps.db.kysely, claims.grantId, claims.accountId, claims.sub)))
    ) {
      throw unauthorized('Authorization revoked');
    }
    const user = await this.activeUser(claims);
    const auth: AuthContext = { accountId: user.account_id, userId: user.id, role: user.role, typ: claims.typ, user };
    if (claims.typ === 'oauth') auth.scopes = (claims.scope ?? '').split(' ').filter(Boolean);
    return auth;
  }

  async createApiKey(auth: AuthContext, name: string): Promise<{ id: number; name: string; token: string }> {
    this.requireInteractiveOwner(auth);
    const issued = await this.signer.sign(auth.userId, auth.accountId, 'api', null, { gen: generationOf(auth.user) });
    const row = await tokens.insertApiKey(this.deps.db.kysely, {
      account_id: auth.accountId,
      user_id: auth.userId,
      name,
      jti: issued.jti,
      created_at: this.deps.clock.now(),
    });
    return { id: row.id, name: row.name, token: issued.token };
  }

  async listApiKeys(auth: AuthContext): Promise<Array<{ id: number; name: string; createdAt: number }>> {
    this.requireInteractiveOwner(auth);
    const rows = await tokens.listApiKeys(this.deps.db.kysely, auth.accountId);
    return rows.map((r) => ({ id: r.id, name: r.name, createdAt: r.created_at }));
  }

  async revokeApiKey(auth: AuthContext, id: number): Promise<void> {
    this.requireInteractiveOwner(auth);
    if (!(await tokens.revokeApiKey(this.deps.db.kysely, auth.accountId, id, this.deps.clock.now()))) {
      throw notFound('API key not found');
    }
  }

  /**
   * Sign-out everywhere: every token the employee holds ends (access, refresh, plugin and, for the
   * owner, API keys), and its open realtime sockets close. Only from a signed-in session.
   */
  async endAllSessions(auth: AuthContext): Promise<void> {
    if (auth.typ !== 'access') throw forbidden('Only a signed-in employee signs out everywhere');
    await this.deps.db.kysely
      .transaction()
      .execute((trx) => tokens.endUserSessions(trx, auth.accountId, auth.userId, this.deps.clock.now()));
    announceSessionsEnded(auth.accountId, auth.userId);
  }

  /** API keys are managed from a signed-in owner session, so a leaked key cannot mint successors. */
  private requireInteractiveOwner(auth: AuthContext): void {
    if (auth.role !== 'owner' || auth.typ !== 'access') {
      throw forbidden('Only the owner, signed in, manages API keys');
    }
  }

  private signAccess(user: UserRow): Promise<IssuedToken> {
    return this.signer.sign(user.id, user.account_id, 'access', this.deps.config.accessTtl, { gen: generationOf(user) });
  }

  private async issueRefresh(user: UserRow, familyId: string): Promise<IssuedToken> {
    const issued = await this.signer.sign(user.id, user.account_id, 'refresh', this.deps.config.refreshTtl, { gen: generationOf(user) });
    await tokens.insertRefreshToken(this.deps.db.kysely, this.refreshRow(user, familyId, issued, this.deps.clock.now()));
    return issued;
  }

  private refreshRow(user: UserRow, familyId: string, issued: IssuedToken, now: number) {
    return {
      id: issued.jti,
      account_id: user.account_id,
      user_id: user.id,
      family_id: familyId,
      token_hash: sha256(issued.token),
      expires_at: issued.exp * 1000,
      created_at: now,
    };
  }

  /**
   * The user a token names, still present, confirmed, and not signed out since the token was made:
   * the token's generation is the user's current one (a login that read the user row before a
   * reset committed carries the old generation, whatever the time it finished).
   */
  private async activeUser(claims: TokenClaims): Promise<UserRow> {
    const user = await this.users.find(claims.accountId, claims.sub);
    if (!user?.confirmed || claims.iat < user.tokens_valid_after || claims.gen !== generationOf(user)) {
      throw unauthorized('Token revoked');
    }
    return user;
  }
}

/** The user's token generation; 0 on a schema from before migration 0045 (tests of older migrations). */
function tokenObject(issued: IssuedToken): TokenObject {
  return { token: issued.token, exp: issued.exp };
}
