import crypto from 'node:crypto';
import type { PluginRow } from '../../db/schema.js';
import type { TokenObject } from '../auth/auth.service.js';
import { generationOf, type AuthContext } from '../auth/auth-context.js';
import { sha256, type TokenSigner } from '../auth/token-signer.js';
import type { Deps } from '../context.js';
import { forbidden, invalid, notFound, unauthorized } from '../errors.js';
import { requireOwner } from '../policy/policy.js';
import { findUser } from '../users/users.repo.js';
import { findPluginByTokenHash, insertPlugin, listPlugins, revokePlugin } from './plugins.repo.js';
import {
  PLUGIN_METADATA_MAX_BYTES,
  PLUGIN_TOKEN_PREFIX,
  type CreatedPlugin,
  type NewPluginInput,
  type PluginSummary,
} from './plugins.types.js';

const INVALID_PLUGIN = 'Invalid plugin token';

/**
 * Plugins (docs/api/auth.md, docs/api/integrations.md): the owner registers a plugin and receives its token once; the
 * plugin exchanges that token at `POST /auth/plugin` for short-lived access tokens acting as an
 * employee of the account. Deleting the plugin revokes its token and every access token it got
 * (those carry the plugin id, checked on each request by AuthService.authenticate).
 */
export class PluginsService {
  constructor(
    private readonly deps: Deps,
    private readonly signer: TokenSigner,
  ) {}

  async list(auth: AuthContext): Promise<PluginSummary[]> {
    this.requireInteractiveOwner(auth);
    const rows = await listPlugins(this.deps.db.kysely, auth.accountId);
    return rows.map(summary);
  }

  async create(auth: AuthContext, input: NewPluginInput): Promise<CreatedPlugin> {
    this.requireInteractiveOwner(auth);
    const metadata = input.metadata ?? {};
    const metadataJson = JSON.stringify(metadata);
    if (Buffer.byteLength(metadataJson) > PLUGIN_METADATA_MAX_BYTES) {
      throw invalid(`metadata must be at most ${PLUGIN_METADATA_MAX_BYTES} bytes of JSON`, [
        { path: 'body.metadata', message: 'is too large' },
      ]);
    }
    const pluginToken = PLUGIN_TOKEN_PREFIX + crypto.randomBytes(32).toString('base64url');
    const row = await insertPlugin(this.deps.db.kysely, {
      account_id: auth.accountId,
      type: input.type,
      name: input.name ?? input.type,
      metadata: metadataJson,
      token_hash: sha256(pluginToken),
      created_at: this.deps.clock.now(),
    });
    return { ...summary(row), metadata, pluginToken };
  }

  async remove(auth: AuthContext, id: number): Promise<void> {
    this.requireInteractiveOwner(auth);
    if (!(await revokePlugin(this.deps.db.kysely, auth.accountId, id, this.deps.clock.now()))) {
      throw notFound('Plugin not found');
    }
  }

  /**
   * `POST /auth/plugin`: an access token of `typ: plugin` acting as `managerId`. An unknown or
   * revoked plugin token, or an employee who is not a confirmed member of the plugin's account,
   * is the same 401.
   */
  async exchange(pluginToken: string, managerId: number): Promise<{ accessToken: TokenObject }> {
    const db = this.deps.db.kysely;
    const plugin = await findPluginByTokenHash(db, sha256(pluginToken));
    if (!plugin || plugin.revoked_at !== null) throw unauthorized(INVALID_PLUGIN);
    const user = Number.isSafeInteger(managerId) ? await findUser(db, plugin.account_id, managerId) : undefined;
    if (!user?.confirmed) throw unauthorized('Unknown employee for this plugin');
    const issued = await this.signer.sign(user.id, plugin.account_id, 'plugin', this.deps.config.pluginTtl, {
      pluginId: plugin.id,
      gen: generationOf(user),
    });
    return { accessToken: { token: issued.token, exp: issued.exp } };
  }

  /**
   * Plugins are managed from a signed-in owner session: a plugin (which may act as the owner) or an
   * API key cannot mint plugins that outlive its own revocation.
   */
  private requireInteractiveOwner(auth: AuthContext): void {
    requireOwner(auth);
    if (auth.typ !== 'access') throw forbidden('Only the owner, signed in, manages plugins');
  }
}

function summary(row: PluginRow): PluginSummary {
  return { id: row.id, type: row.type, name: row.name, status: row.status };
}
