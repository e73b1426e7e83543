import type { Updateable } from 'kysely';
import type { IntegrationRow, IntegrationsTable } from '../../db/schema.js';
import type { ChannelIntegration, ConnectResult } from '../channels/channel.js';
import { ChannelRejectedError, ChannelTimeoutError, ChannelWebhookError } from '../channels/channel.js';
import { credentialProblems } from '../channels/credential-shapes.js';
import { healthOf, type HealthError } from '../channels/health-messages.js';
import { canonicalIntegrationType, isIntegrationType, type IntegrationType } from '../channels/integration-types.js';
import { isBridgeType } from '../bridge/bridge-types.js';
import type { ChannelRegistry } from '../channels/registry.js';
import { recordEvent } from '../../events/outbox.js';
import type { AuthContext } from '../auth/auth-context.js';
import { loadOrCreateSecret } from '../auth/secret.js';
import type { Deps } from '../context.js';
import { AppError, invalid, notFound, type ErrorDetail } from '../errors.js';
import { networkOf } from '../channels/networks.js';
import { canUseIntegration, requireOwner, scopeOf } from '../policy/policy.js';
import { existingUserIds, findOwner } from '../users/users.repo.js';
import { channelAppError, isChannelError } from './channel-errors.js';
import { CredentialsCipher } from './credentials-cipher.js';
import { IntegrationHealth } from './integration-health.js';
import * as repo from './integrations.repo.js';
import {
  businessSystemsOf,
  integrationView,
  parseSettings,
  parseUserMapping,
  type ConnectInput,
  type UserMapping,
} from './integrations.types.js';

/** Serialized settings above this size are refused: they are configuration, not storage. */
const MAX_SETTINGS_BYTES = 16 * 1024;

/**
 * Integrations of an account (docs/api/integrations.md): listing within an employee's reach, connecting and
 * disconnecting (owner only), and the user mappings of integrations linked to business systems.
 * Credentials are sealed with {@link CredentialsCipher} before they reach the database and opened
 * only to build the {@link ChannelIntegration} an adapter receives.
 */
export class IntegrationsService {
  private readonly cipher: CredentialsCipher;
  /** Each integration's health: activity, last error (docs/api/integrations.md "Health"). */
  readonly health: IntegrationHealth;

  constructor(
    private readonly deps: Deps,
    private readonly channels: ChannelRegistry,
  ) {
    const secret = loadOrCreateSecret(deps.config.encryptionKey, deps.config.dataDir, 'encryption-key');
    this.cipher = new CredentialsCipher(secret);
    this.health = new IntegrationHealth(deps);
  }

  private get db() {
    return this.deps.db.kysely;
  }

  /** Live integrations the caller may use; deleted ones are never listed. */
  async list(auth: AuthContext): Promise<IntegrationRow[]> {
    const scope = await scopeOf(this.db, auth);
    return repo.listIntegrations(this.db, auth.accountId, scope.integrations);
  }

  /** A live integration the caller may use; otherwise 404 (another account's, deleted, out of reach). */
  async get(auth: AuthContext, id: number): Promise<IntegrationRow> {
    const row = await repo.findIntegration(this.db, auth.accountId, id);
    if (!row || !canUseIntegration(await scopeOf(this.db, auth), row.id)) throw notFound('Integration not found');
    return row;
  }

  /**
   * Connects an integration. With an adapter for the type, the credentials are checked with the
   * provider first: a refusal keeps the integration with status `auth failure`; a failure or
   * timeout of the provider keeps nothing (502/504). The adapter gets the integration's id (it may
   * register it with the provider), so the row exists first as a hidden draft (deleted_at set) and
   * becomes visible, with its `integration.created` event, in one transaction after the check.
   */
  async connect(auth: AuthContext, given: ConnectInput): Promise<IntegrationRow> {
    requireOwner(auth);
    const input = { ...given, type: canonicalIntegrationType(given.type) };
    const credentials = checkConnectInput(input);
    const settings = input.settings ?? {};
    const now = this.deps.clock.now();
    const base = {
      account_id: auth.accountId,
      type: input.type,
      login: input.login ?? '',
      credentials: this.cipher.sealCredentials(credentials, auth.accountId),
      settings: JSON.stringify(settings),
      created_at: now,
    };
    const adapter = this.channels.get(input.type);
    if (!adapter?.connect) {
      // An integration that cannot carry messages never says `active`: a type no channel serves
      // in this installation is refused (docs/api/integrations.md), not recorded as connected.
      if (!isBridgeType(input.type)) throw invalid(`Integration type ${input.type} is not available in this installation`);
      return this.db.transaction().execute(async (trx) => {
        // A bridge-served account carries nothing until its bridge has logged in.
        const row = await repo.insertIntegration(trx, { ...base, status: 'connecting' });
        await this.recordChange(trx, row, 'integration.created', now);
        return row;
      });
    }

    const draft = await repo.insertIntegration(this.db, { ...base, status: 'active', deleted_at: now });
    let patch: Updateable<IntegrationsTable>;
    try {
      patch = foundPatch(await adapter.connect(this.channelIntegration(draft)), base.login);
    } catch (err) {
      // A refusal or a provider that does not answer keeps the integration in `auth failure` with
      // the reason in its health; a webhook refusal or a provider failure keeps nothing.
      if (!(err instanceof ChannelRejectedError || err instanceof ChannelTimeoutError) || err instanceof ChannelWebhookError) {
        await repo.deleteIntegrationRow(this.db, auth.accountId, draft.id);
        throw err instanceof ChannelWebhookError ? invalid(err.message) : channelAppError(err);
      }
      const error = healthOf(input.type, err, 'connect', this.deps.config.sendTimeoutMs);
      this.deps.log.info({ integrationId: draft.id, type: input.type, reason: err.message }, 'provider refused the credentials');
      patch = { status: 'auth failure', ...errorColumns(error, this.deps.clock.now()) };
    }
    const at = this.deps.clock.now();
    return this.db.transaction().execute(async (trx) => {
      const row = await repo.updateIntegration(trx, auth.accountId, draft.id, { ...patch, deleted_at: null });
      await this.recordChange(trx, row, 'integration.created', at);
      return row;
    });
  }

  /**
   * Replaces the credentials of a connected integration, keeping its id and its leads: the new ones
   * are checked with the provider first (a refusal answers 422 with the health sentence and keeps
   * the old ones) and must name the same provider account. Success clears the last error.
   */
  async updateCredentials(auth: AuthContext, id: number, credentials: Record<string, string>): Promise<IntegrationRow> {
    requireOwner(auth);
    const row = await this.get(auth, id);
    const adapter = this.channels.get(row.type);
    // The site widget's "connect" makes its key: run again it would cut off the sites using the old one.
    if (!isIntegrationType(row.type) || !adapter?.connect || isBridgeType(row.type) || row.type === 'widget') {
      throw invalid(`A ${row.type} integration has no credentials to update`, [
        {
          path: 'params.id',
          message: isBridgeType(row.type) ? 'is served by an account bridge: rotate its bridge token' : 'takes no credentials',
        },
      ]);
    }
    checkCredentials(row.type, credentials);
    let found: ConnectResult;
    try {
      found = await adapter.connect({ ...this.channelIntegration(row), credentials });
    } catch (err) {
      if (err instanceof ChannelWebhookError) throw invalid(err.message);
      if (err instanceof ChannelRejectedError) {
        throw new AppError(422, 'channel_rejected', healthOf(row.type, err, 'connect', this.deps.config.sendTimeoutMs).message);
      }
      throw channelAppError(err);
    }
    if (row.external_id && found.externalId && found.externalId !== row.external_id) {
      throw new AppError(
        422,
        'channel_rejected',
        `These credentials are of another ${networkOf(row.type).network} account (${found.login || found.externalId}): connect it as a new channel`,
      );
    }
    const updated = await this.updateTelling(auth.accountId, id, {
      ...foundPatch(found, row.login),
      credentials: this.cipher.sealCredentials(credentials, auth.accountId),
      ...NO_ERROR,
    });
    this.deps.log.info({ integrationId: id, type: row.type }, 'integration credentials updated');
    return updated;
  }

  /**
   * Connects an integration again with its stored credentials (the provider's webhook registered
   * anew). The outcome is the integration's status and health: a refusal or a provider that does
   * not answer is recorded there, never answered as an error.
   */
  async reconnect(auth: AuthContext, id: number): Promise<IntegrationRow> {
    requireOwner(auth);
    const row = await this.get(auth, id);
    const adapter = this.channels.get(row.type);
    if (!adapter?.connect || isBridgeType(row.type) || row.type === 'widget') {
      throw invalid(`A ${row.type} integration has nothing to reconnect`, [
        {
          path: 'params.id',
          message: isBridgeType(row.type) ? 'is served by an account bridge: start the bridge again' : 'has no provider connection',
        },
      ]);
    }
    let patch: Updateable<IntegrationsTable>;
    try {
      patch = { ...foundPatch(await adapter.connect(this.channelIntegration(row)), row.login), ...NO_ERROR };
    } catch (err) {
      if (!isChannelError(err)) throw err;
      const error = healthOf(row.type, err, 'connect', this.deps.config.sendTimeoutMs);
      const refused = error.code === 'credentials_refused';
      patch = { ...(refused ? { status: 'auth failure' } : {}), ...errorColumns(error, this.deps.clock.now()) };
    }
    return this.updateTelling(auth.accountId, id, patch);
  }

  /** Updates an integration and tells the live streams its status or health may have changed. */
  private updateTelling(accountId: number, id: number, patch: Updateable<IntegrationsTable>): Promise<IntegrationRow> {
    return this.db.transaction().execute(async (trx) => {
      const row = await repo.updateIntegration(trx, accountId, id, patch);
      await this.health.changed(trx, accountId, id);
      return row;
    });
  }

  /**
   * Sends a test message to the owner's own address (`to`, a phone number in international format)
   * where the provider lets a business write first (docs/api/integrations.md "Send a test"); other
   * types answer 400 naming why. A refusal answers 422 with the provider's reason.
   */
  async sendTest(auth: AuthContext, id: number, to: string): Promise<{ messageId: string }> {
    requireOwner(auth);
    const row = await this.get(auth, id);
    const adapter = this.channels.get(row.type);
    if (!adapter?.sendTest) {
      throw invalid(`A ${row.type} integration cannot send a test message`, [
        { path: 'params.id', message: 'its provider lets a business write only to a customer who wrote first: send it a message instead' },
      ]);
    }
    const phone = to.replace(/[\s().-]/g, '').replace(/^\+/, '');
    if (!/^[1-9]\d{5,14}$/.test(phone)) {
      throw invalid('The test address is not a phone number', [
        { path: 'body.to', message: 'must be a phone number in international format, e.g. +44 7700 900123' },
      ]);
    }
    try {
      const sent = await adapter.sendTest(this.channelIntegration(row), phone);
      await this.health.outbound(row);
      return sent;
    } catch (err) {
      throw channelAppError(err);
    }
  }

  /**
   * Disconnects: tells the provider when an adapter can (its failure is logged, never blocking:
   * the owner must always be able to remove an integration), then soft-deletes it. Leads, customers
   * and messages keep their rows.
   */
  async disconnect(auth: AuthContext, id: number): Promise<void> {
    requireOwner(auth);
    const row = await repo.findIntegration(this.db, auth.accountId, id);
    if (!row) throw notFound('Integration not found');
    const adapter = this.channels.get(row.type);
    if (adapter?.disconnect) {
      try {
        await adapter.disconnect(this.channelIntegration(row));
      } catch (err) {
        this.deps.log.warn({ err, integrationId: id }, 'provider disconnect failed; integration removed here anyway');
      }
    }
    const now = this.deps.clock.now();
    await this.db.transaction().execute(async (trx) => {
      const deleted = await repo.markIntegrationDeleted(trx, auth.accountId, id, now);
      // Deleted meanwhile by another request: that one recorded the event.
      if (!deleted) throw notFound('Integration not found');
      await this.recordChange(trx, deleted, 'integration.deleted', now);
    });
  }

  /**
   * The stored user mapping, with `default` (the owner unless the mapping names another employee).
   * Entries naming employees that no longer exist are left out.
   */
  async userMappings(auth: AuthContext, id: number): Promise<UserMapping> {
    const row = await this.get(auth, id);
    requireBusinessSystems(row);
    const stored = parseUserMapping(row.user_mappings);
    const employees = await existingUserIds(this.db, auth.accountId, Object.values(stored));
    const owner = await findOwner(this.db, auth.accountId);
    const mapping: UserMapping = {};
    for (const [external, employee] of Object.entries(stored)) {
      if (external !== 'default' && employees.has(employee)) mapping[external] = employee;
    }
    const fallback = stored.default;
    mapping.default = fallback !== undefined && employees.has(fallback) ? fallback : (owner?.id ?? auth.userId);
    return mapping;
  }

  /** Replaces the mapping. Every value must be an employee of the account (else 400, nothing kept). */
  async setUserMappings(auth: AuthContext, id: number, mapping: UserMapping): Promise<UserMapping> {
    requireOwner(auth);
    const row = await this.get(auth, id);
    requireBusinessSystems(row);
    const employees = await existingUserIds(this.db, auth.accountId, [...new Set(Object.values(mapping))]);
    const details: ErrorDetail[] = Object.entries(mapping)
      .filter(([, employee]) => !employees.has(employee))
      .map(([external]) => ({ path: `body.${external}`, message: 'is not an employee of this account' }));
    if (details.length) throw invalid(`User mapping names ${details.length === 1 ? 'an unknown employee' : 'unknown employees'}`, details);
    await repo.updateIntegration(this.db, auth.accountId, id, { user_mappings: JSON.stringify(mapping) });
    return this.userMappings(auth, id);
  }

  /** What an adapter receives: the integration with its credentials opened. */
  channelIntegration(row: IntegrationRow): ChannelIntegration {
    return {
      id: row.id,
      accountId: row.account_id,
      type: row.type,
      login: row.login,
      externalId: row.external_id,
      identifier: row.identifier,
      credentials: this.cipher.openCredentials(row.credentials, row.account_id),
      settings: parseSettings(row.settings),
    };
  }

  private async recordChange(
    trx: Parameters<typeof recordEvent>[0],
    row: IntegrationRow,
    type: 'integration.created' | 'integration.deleted',
    now: number,
  ): Promise<void> {
    await recordEvent(trx, { accountId: row.account_id, type, payload: { integrationId: row.id, integration: integrationView(row) } }, now);
  }
}

/** The checks the schema cannot make: a known type, its required credentials, bounded settings. */
function checkConnectInput(input: ConnectInput): Record<string, string> {
  if (!isIntegrationType(input.type)) {
    throw invalid(`Unknown integration type "${input.type}"`, [{ path: 'body.type', message: 'is not a known integration type' }]);
  }
  const credentials = input.credentials ?? {};
  checkCredentials(input.type, credentials);
  if (Buffer.byteLength(JSON.stringify(input.settings ?? {})) > MAX_SETTINGS_BYTES) {
    throw invalid('settings are too large', [{ path: 'body.settings', message: `must be at most ${MAX_SETTINGS_BYTES} bytes as JSON` }]);
  }
  return credentials;
}

/** Required credentials present and of their shape (domain/channels/credential-shapes.ts), else 400 naming each field. */
function checkCredentials(type: IntegrationType, credentials: Record<string, string>): void {
  const problems = credentialProblems(type, credentials);
  if (!problems.length) return;
  const fields = problems.map((p) => p.path.slice('body.credentials.'.length));
  const missing = problems.every((p) => p.message === 'is required');
  throw invalid(
    `${missing ? 'Missing' : 'Malformed'} credential${fields.length > 1 ? 's' : ''} for ${type}: ${fields.join(', ')}`,
    problems,
  );
}

/** What the provider told of the connected account, as the integration's columns. */
function foundPatch(found: ConnectResult, login: string): Updateable<IntegrationsTable> {
  return {
    status: 'active',
    login: found.login || login,
    external_id: found.externalId ?? '',
    identifier: found.identifier ?? '',
    avatar: found.avatar ?? '',
    url: found.url ?? '',
  };
}

const NO_ERROR = { last_error_at: null, last_error: null, last_error_code: null } as const;

function errorColumns(error: HealthError, at: number): Updateable<IntegrationsTable> {
  return { last_error_at: at, last_error: error.message, last_error_code: error.code };
}

function requireBusinessSystems(row: IntegrationRow): void {
  if (!businessSystemsOf(row).length) {
    throw invalid('User mappings exist only for integrations linked to external business systems', [
      { path: 'params.id', message: 'integration has no external business systems' },
    ]);
  }
}
