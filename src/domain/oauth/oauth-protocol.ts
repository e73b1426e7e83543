import type OAuth2Server from '@node-oauth/oauth2-server';
import type { Deps } from '../context.js';
import type { AuthContext } from '../auth/auth-context.js';
import { sha256, type TokenSigner } from '../auth/token-signer.js';
import { AppError } from '../errors.js';
import { OAUTH_SCOPES, requireInteractive } from '../policy/policy.js';
import { grantableScopes, OAuthModel, type OAuthUser } from './oauth-model.js';
import * as repo from './oauth.repo.js';
import { oauthLibrary, type OAuthLibrary } from './oauth-library.js';

/** A protocol answer for the HTTP face to send as is (the token and revocation endpoints' own format). */
export interface ProtocolAnswer {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

export interface ProtocolRequest {
  method: string;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
}

/** What the consent screen shows, after the request was checked. */
export interface ConsentPreview {
  app: { clientId: string; name: string };
  scopes: string[];
  redirectUri: string;
}

export type AuthorizeParams = Record<string, string | undefined>;

const TOKEN_OPTIONS = {
  // Public clients authenticate with PKCE alone; the model refuses a confidential client without its secret.
  requireClientAuthentication: { authorization_code: false, refresh_token: false },
  alwaysIssueNewRefreshToken: true,
};

/**
 * Parley as an OAuth 2 authorization server (docs/api/oauth.md): authorization code with PKCE,
 * rotating refresh tokens, revocation (RFC 7009) and metadata (RFC 8414). The protocol itself is
 * @node-oauth/oauth2-server's; this class feeds it and shapes its answers.
 */
export class OAuthProtocol {
  private readonly consentModel: OAuthModel;
  private readonly tokenModel: OAuthModel;
  private servers?: Promise<{ lib: OAuthLibrary; consent: OAuth2Server; token: OAuth2Server }>;

  constructor(
    private readonly deps: Deps,
    private readonly signer: TokenSigner,
  ) {
    this.consentModel = new OAuthModel(deps, signer, false);
    this.tokenModel = new OAuthModel(deps, signer, true);
  }

  /** The library's two servers (consent and token), made when the protocol is first used. */
  private protocol() {
    this.servers ??= oauthLibrary().then((lib) => ({
      lib,
      consent: new lib({ model: this.consentModel as never, allowEmptyState: true }),
      token: new lib({
        model: this.tokenModel as never,
        accessTokenLifetime: this.deps.config.accessTtl,
        refreshTokenLifetime: this.deps.config.refreshTtl,
      }),
    }));
    return this.servers;
  }

  /** Checks an authorization request for the consent screen; every problem is a 400 naming it. */
  async preview(auth: AuthContext, params: AuthorizeParams): Promise<ConsentPreview> {
    requireInteractive(auth);
    if (params.response_type !== 'code') throw oauthInvalid('unsupported_response_type', 'response_type must be "code"');
    const client = await this.clientOf(params);
    if (!client || client.accountId !== auth.accountId) throw oauthInvalid('invalid_client', 'Unknown client_id');
    const redirectUri = params.redirect_uri ?? client.redirectUris[0];
    if (!client.redirectUris.includes(redirectUri))
      throw oauthInvalid('invalid_redirect_uri', 'redirect_uri is not registered for this app');
    const scopes = grantableScopes(auth.role, params.scope?.split(' ').filter(Boolean));
    if (!scopes) throw oauthInvalid('invalid_scope', `scope must be among ${OAUTH_SCOPES.join(', ')}; admin only for the owner`);
    if (params.code_challenge_method !== undefined && params.code_challenge_method !== 'S256') {
      throw oauthInvalid('invalid_request', 'code_challenge_method must be S256');
    }
    if (!client.confidential && !params.code_challenge)
      throw oauthInvalid('invalid_request', 'PKCE (code_challenge, S256) is required for this app');
    return { app: { clientId: client.id, name: client.name }, scopes, redirectUri };
  }

  /**
   * The employee's decision. Allowed: a code bound to the grant, PKCE challenge and redirect URI.
   * Denied, or a request problem the app should hear of: the error goes back to the app. Problems
   * with the client or redirect URI never redirect (400).
   */
  async authorize(auth: AuthContext, params: AuthorizeParams, allowed: boolean): Promise<{ redirectTo: string }> {
    requireInteractive(auth);
    const client = await this.clientOf(params);
    // Apps of other accounts do not exist for this employee.
    if (!client || client.accountId !== auth.accountId) throw oauthInvalid('invalid_client', 'Unknown client_id');
    const user: OAuthUser = { id: auth.userId, accountId: auth.accountId, role: auth.role };
    const body = { ...definedOnly(params), allowed: allowed ? 'true' : 'false' };
    const { lib, consent } = await this.protocol();
    const { Request, Response, OAuthError } = lib;
    const request = new Request({ method: 'POST', headers: {}, query: {}, body });
    const response = new Response();
    try {
      await consent.authorize(request, response, { authenticateHandler: { handle: () => user }, allowEmptyState: true });
    } catch (err) {
      if (!(err instanceof OAuthError) || !response.headers?.location)
        throw err instanceof OAuthError ? oauthInvalid(err.name, err.message) : err;
    }
    const location = response.headers?.location;
    if (!location) throw new Error('the authorization server answered without a redirect');
    return { redirectTo: String(location) };
  }

  /** The token endpoint: authorization_code and refresh_token grants. */
  async token(req: ProtocolRequest): Promise<ProtocolAnswer> {
    const { lib, token } = await this.protocol();
    const { Request, Response, OAuthError } = lib;
    const request = new Request({ method: req.method, headers: basicDecoded(req.headers), query: {}, body: req.body });
    const response = new Response();
    try {
      await token.token(request, response, TOKEN_OPTIONS);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      // Checks of the request's shape (method, content type) fail before the library fills the response.
      return { status: err.code, headers: stringHeaders(response.headers), body: { error: err.name, error_description: err.message } };
    }
    return {
      status: response.status ?? 200,
      headers: stringHeaders(response.headers),
      body: (response.body ?? {}) as Record<string, unknown>,
    };
  }

  /**
   * RFC 7009. The client authenticates as at the token endpoint; a token of another client, or
   * unknown, is answered 200 too. Revoking either token of a grant revokes the grant (access tokens
   * are checked against their grant on every request).
   */
  async revoke(req: ProtocolRequest): Promise<ProtocolAnswer> {
    const { clientId, clientSecret } = clientCredentials(req);
    // RFC 6749 Appendix A: ids and secrets are printable ASCII (so no NUL reaches the database).
    const printable = (v: string | undefined) => v === undefined || /^[\x20-\x7E]{1,512}$/.test(v);
    const client =
      clientId && printable(clientId) && printable(clientSecret) ? await this.tokenModel.getClient(clientId, clientSecret) : false;
    if (!client)
      return {
        status: 401,
        headers: { 'www-authenticate': 'Basic realm="parley"' },
        body: { error: 'invalid_client', error_description: 'Client authentication failed' },
      };
    const token = typeof req.body.token === 'string' ? req.body.token : '';
    if (!token) return { status: 400, headers: {}, body: { error: 'invalid_request', error_description: 'Missing parameter: `token`' } };
    const grantId = await this.grantOfToken(token);
    if (grantId !== undefined) {
      const grant = await repo.findGrant(this.deps.db.kysely, grantId);
      if (grant && grant.app_id === client.appId) await repo.revokeGrant(this.deps.db.kysely, grant.id, this.deps.clock.now());
    }
    return { status: 200, headers: { 'cache-control': 'no-store' }, body: {} };
  }

  /** RFC 8414 metadata; `issuer` is the installation's public origin. */
  metadata(issuer: string): Record<string, unknown> {
    const authMethods = ['client_secret_basic', 'client_secret_post', 'none'];
    return {
      issuer,
      authorization_endpoint: `${issuer}/oauth/authorize`,
      token_endpoint: `${issuer}/oauth/token`,
      revocation_endpoint: `${issuer}/oauth/revoke`,
      scopes_supported: [...OAUTH_SCOPES],
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: authMethods,
      revocation_endpoint_auth_methods_supported: authMethods,
      service_documentation: `${issuer}/docs`,
    };
  }

  private async clientOf(params: AuthorizeParams) {
    const id = params.client_id;
    return id && /^[\x20-\x7E]{1,200}$/.test(id) ? this.consentModel.getClient(id, null) : false;
  }

  private async grantOfToken(token: string): Promise<number | undefined> {
    const refresh = await repo.findRefreshTokenByHash(this.deps.db.kysely, sha256(token));
    if (refresh) return refresh.grant_id;
    try {
      const claims = await this.signer.verify(token);
      return claims.typ === 'oauth' ? claims.grantId : undefined;
    } catch {
      return undefined;
    }
  }
}

function oauthInvalid(code: string, message: string): AppError {
  return new AppError(400, code, message);
}

function definedOnly(params: AuthorizeParams): Record<string, string> {
  return Object.fromEntries(Object.entries(params).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

function stringHeaders(headers: Record<string, unknown> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(headers ?? {}).map(([k, v]) => [k, String(v)]));
}

/**
 * RFC 6749 §2.3.1 form-encodes the id and secret inside HTTP Basic (oauth4webapi does, so `-`
 * arrives as `%2D`); the library compares them undecoded, so it gets the decoded pair.
 */
function basicDecoded(headers: ProtocolRequest['headers']): Record<string, string> {
  const out = stringHeaders(headers);
  if (!out.authorization || !/^\s*basic\s/i.test(out.authorization)) return out;
  const { clientId, clientSecret } = clientCredentials({ method: 'POST', headers, body: {} });
  if (clientId === undefined) delete out.authorization;
  else out.authorization = `Basic ${Buffer.from(`${clientId}:${clientSecret ?? ''}`).toString('base64')}`;
  return out;
}

/** RFC 6749 §2.3.1: HTTP Basic (form-encoded id and secret) or the body's client_id / client_secret. */
function clientCredentials(req: ProtocolRequest): { clientId?: string; clientSecret?: string } {
  const header = req.headers.authorization;
  const basic = typeof header === 'string' ? /^\s*basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header) : null;
  if (basic) {
    const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0) {
      try {
        const formDecode = (v: string) => decodeURIComponent(v.replace(/\+/g, ' '));
        return { clientId: formDecode(decoded.slice(0, colon)), clientSecret: formDecode(decoded.slice(colon + 1)) };
      } catch {
        return {};
      }
    }
    return {};
  }
  const str = (v: unknown) => (typeof v === 'string' && v ? v : undefined);
  return { clientId: str(req.body.client_id), clientSecret: str(req.body.client_secret) };
}
