import crypto from 'node:crypto';
import type { Deps } from '../context.js';
import type { AuthContext } from '../auth/auth-context.js';
import { sha256 } from '../auth/token-signer.js';
import { invalid, notFound } from '../errors.js';
import { requireInteractive, requireOwner } from '../policy/policy.js';
import { toClient } from './oauth-model.js';
import * as repo from './oauth.repo.js';

export interface NewOAuthApp {
  name: string;
  redirectUris: string[];
  /** Confidential apps (a server) get a secret; public ones (a phone or browser app) use PKCE alone. */
  confidential: boolean;
}

export interface OAuthAppView {
  id: number;
  clientId: string;
  name: string;
  redirectUris: string[];
  confidential: boolean;
  createdAt: number;
}

export interface ConnectedApp {
  appId: number;
  name: string;
  scopes: string[];
  grantedAt: number;
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * Redirect URIs (RFC 8252, OAuth 2 security BCP): absolute, no fragment; https anywhere, http only
 * to the loopback (native apps), or a private-use scheme in reverse-domain form (com.example.app:).
 * They are later compared exactly.
 */
export function redirectUriProblem(uri: string): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'is not an absolute URI';
  }
  if (url.hash || uri.includes('#')) return 'must not contain a fragment';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:') return LOOPBACK_HOSTS.has(url.hostname) ? undefined : 'must use https (http only for the loopback)';
  if (/^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/i.test(url.protocol)) return undefined;
  return 'must use https, http to the loopback, or a reverse-domain private-use scheme';
}

/** Apps (owner, signed in) and the employee's own grants ("Connected apps"). */
export class OAuthService {
  constructor(private readonly deps: Deps) {}

  async createApp(auth: AuthContext, input: NewOAuthApp): Promise<OAuthAppView & { clientSecret?: string }> {
    requireOwner(auth);
    requireInteractive(auth);
    const details = input.redirectUris.flatMap((uri, i) => {
      const problem = redirectUriProblem(uri);
      return problem ? [{ path: `/redirectUris/${i}`, message: `redirect URI ${problem}` }] : [];
    });
    if (details.length) throw invalid('Invalid redirect URI', details);
    const clientSecret = input.confidential ? crypto.randomBytes(32).toString('base64url') : undefined;
    const row = await repo.insertApp(this.deps.db.kysely, {
      account_id: auth.accountId,
      client_id: `parley_${crypto.randomBytes(16).toString('hex')}`,
      secret_hash: clientSecret ? sha256(clientSecret) : null,
      name: input.name,
      redirect_uris: JSON.stringify([...new Set(input.redirectUris)]),
      created_at: this.deps.clock.now(),
    });
    return { ...appView(row), ...(clientSecret ? { clientSecret } : {}) };
  }

  async listApps(auth: AuthContext): Promise<OAuthAppView[]> {
    requireOwner(auth);
    requireInteractive(auth);
    return (await repo.listApps(this.deps.db.kysely, auth.accountId)).map(appView);
  }

  /** Deleting an app ends every grant, code and token it holds. */
  async deleteApp(auth: AuthContext, id: number): Promise<void> {
    requireOwner(auth);
    requireInteractive(auth);
    if (!(await repo.deleteApp(this.deps.db.kysely, auth.accountId, id))) throw notFound('OAuth app not found');
  }

  async listConnected(auth: AuthContext): Promise<ConnectedApp[]> {
    requireInteractive(auth);
    const byApp = new Map<number, ConnectedApp>();
    for (const row of await repo.listUserGrants(this.deps.db.kysely, auth.accountId, auth.userId)) {
      const app = byApp.get(row.app_id) ?? { appId: row.app_id, name: row.name, scopes: [], grantedAt: row.created_at };
      for (const s of row.scope.split(' ')) if (!app.scopes.includes(s)) app.scopes.push(s);
      byApp.set(row.app_id, app);
    }
    return [...byApp.values()];
  }

  async revokeConnected(auth: AuthContext, appId: number): Promise<void> {
    requireInteractive(auth);
    const db = this.deps.db.kysely;
    const revoked = await db.transaction().execute((trx) => repo.revokeUserAppGrants(trx, auth.userId, appId, this.deps.clock.now()));
    if (!revoked) throw notFound('No authorization for this app');
  }
}

function appView(row: Parameters<typeof toClient>[0]): OAuthAppView {
  const client = toClient(row);
  return {
    id: row.id,
    clientId: row.client_id,
    name: row.name,
    redirectUris: client.redirectUris,
    confidential: client.confidential,
    createdAt: row.created_at,
  };
}
