import { Readable } from 'node:stream';
import type { IntegrationRow } from '../../db/schema.js';
import { loadOrCreateSecret } from '../../domain/auth/secret.js';
import type { Deps } from '../../domain/context.js';
import type { IngestService } from '../../domain/conversations/ingest.service.js';
import type { IngestResult } from '../../domain/conversations/conversations.types.js';
import { invalid, notFound, unauthorized } from '../../domain/errors.js';
import { parseBoundedJson } from '../../domain/json-limits.js';
import type { FilesService } from '../../domain/files/files.service.js';
import type { IntegrationsService } from '../../domain/integrations/integrations.service.js';
import { integrationCache } from '../../domain/integrations/integration-cache.js';
import type { ChannelAdapter } from '../../domain/channels/channel.js';
import { TelegramAdapter } from '../telegram/telegram-adapter.js';
import { MalformedUpdateError, normalizeUpdate } from '../telegram/telegram-updates.js';
import { ViberAdapter } from '../viber/viber-adapter.js';
import { MalformedEventError, normalizeEvent, parseEvent, signatureMatches } from '../viber/viber-events.js';
import { readAll, sameSecret, webhookSecretOf, type BotKit } from './bot-kit.js';

export interface BotParts {
  files: Pick<FilesService, 'store' | 'download'>;
  ingest: Pick<IngestService, 'ingest'>;
  integrations: Pick<IntegrationsService, 'channelIntegration' | 'health'>;
}

export type InboundOutcome = 'stored' | 'duplicate' | 'ignored';

/**
 * The messenger bot channels (Telegram `msgrb_bot`, Viber `msgrc_bot`): their adapters, and the
 * inbound side the adapters cannot do alone because it touches the database: webhook calls
 * (secret or signature checked before anything is read), Telegram updates from long polling, the
 * durable polling offsets, and flipping an integration to `auth failure` when its token is refused.
 * A message is acknowledged to the provider only after ingest committed it.
 */
export class BotChannels {
  readonly kit: BotKit;
  readonly telegram: TelegramAdapter;
  readonly viber: ViberAdapter;
  /** How adapters wait for a provider's retry-after; tests replace it to observe the delay. */
  wait: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  constructor(
    private readonly deps: Deps,
    readonly parts: BotParts,
  ) {
    const { config, log } = deps;
    const secret = webhookSecretOf(loadOrCreateSecret(config.encryptionKey, config.dataDir, 'encryption-key'));
    this.kit = {
      config,
      log,
      saveFile: (accountId, bytes, meta) => parts.files.store(accountId, Readable.from([bytes]), meta),
      readFile: async (fileId) => {
        const found = await parts.files.download(fileId);
        const stream = found && (await found.open());
        return found && stream ? { file: found.file, bytes: await readAll(stream) } : undefined;
      },
      authFailed: (id, reason) => this.markAuthFailure(id, reason),
      wait: (ms) => this.wait(ms),
      webhookSecret: secret,
    };
    this.telegram = new TelegramAdapter(this.kit);
    this.viber = new ViberAdapter(this.kit);
  }

  get adapters(): ChannelAdapter[] {
    return [this.telegram, this.viber];
  }

  private get db() {
    return this.deps.db.kysely;
  }

  /** The token was refused: the integration shows `auth failure`, the refusal in its health. */
  async markAuthFailure(integrationId: number, reason: string): Promise<void> {
    if (await this.parts.integrations.health.credentialsRefused(integrationId, reason))
      this.deps.log.warn({ integrationId, reason }, 'provider refused the token: integration set to auth failure');
  }

  // --- Telegram --------------------------------------------------------------------------------

  /** `POST /channels/telegram/<id>`: the secret_token header first, then the update. */
  async telegramWebhook(integrationId: number, secretHeader: string | undefined, raw: Buffer): Promise<InboundOutcome> {
    const row = await this.integration('msgrb_bot', integrationId);
    if (!row || row.deleted_at !== null) throw notFound('Integration not found');
    if (!sameSecret(secretHeader, this.kit.webhookSecret('telegram', row.id))) {
      this.deps.log.warn({ integrationId }, 'Telegram webhook call with a wrong or missing secret token');
      throw unauthorized('Wrong or missing X-Telegram-Bot-Api-Secret-Token');
    }
    let update: unknown;
    try {
      update = parseBoundedJson(raw.toString('utf8'));
    } catch {
      this.deps.log.warn({ integrationId }, 'Telegram webhook body is not JSON');
      throw invalid('The update is not JSON');
    }
    return this.telegramUpdate(row, update);
  }

  /** One update (webhook or polling): stored, a redelivery, or ignored; malformed -> 400. */
  async telegramUpdate(row: IntegrationRow, update: unknown): Promise<InboundOutcome> {
    const integration = this.parts.integrations.channelIntegration(row);
    let normalized;
    try {
      normalized = await normalizeUpdate(this.kit, this.telegram.api(integration), integration, update, {
        needAvatar: (socialId) => this.needsAvatar(row.id, socialId),
      });
    } catch (err) {
      if (!(err instanceof MalformedUpdateError)) throw err;
      this.deps.log.warn({ integrationId: row.id, reason: err.message }, 'malformed Telegram update');
      throw invalid(`Malformed update: ${err.message}`);
    }
    if (normalized.kind === 'ignored') {
      this.deps.log.debug({ integrationId: row.id, updateId: normalized.updateId, reason: normalized.reason }, 'Telegram update ignored');
      return 'ignored';
    }
    return outcome(await this.parts.ingest.ingest(row, normalized.incoming));
  }

  /** Active Telegram integrations, which long polling serves when Parley has no public address. */
  async pollableIntegrations(id?: number): Promise<IntegrationRow[]> {
    let query = this.db
      .selectFrom('integrations')
      .selectAll()
      .where('type', '=', 'msgrb_bot')
      .where('status', '=', 'active')
      .where('deleted_at', 'is', null);
    if (id !== undefined) query = query.where('id', '=', id);
    return query.orderBy('id').execute();
  }

  async pollOffset(integrationId: number): Promise<number> {
    const row = await this.db
      .selectFrom('bot_poll_offsets')
      .select('next_offset')
      .where('integration_id', '=', integrationId)
      .executeTakeFirst();
    return row ? Number(row.next_offset) : 0;
  }

  async savePollOffset(integrationId: number, next: number): Promise<void> {
    const now = this.deps.clock.now();
    await this.db
      .insertInto('bot_poll_offsets')
      .values({ integration_id: integrationId, next_offset: next, updated_at: now })
      .onConflict((oc) => oc.column('integration_id').doUpdateSet({ next_offset: next, updated_at: now }))
      .execute();
  }

  // --- Viber -----------------------------------------------------------------------------------

  /**
   * `POST /channels/viber/<id>`: the signature over the raw body first, then the callback. Viber
   * checks the webhook with a `webhook` callback while `set_webhook` runs, that is while the
   * integration is still being connected: that one callback is answered for a draft too.
   */
  async viberWebhook(integrationId: number, signature: string | undefined, raw: Buffer): Promise<InboundOutcome> {
    const row = await this.integration('msgrc_bot', integrationId);
    if (!row) throw notFound('Integration not found');
    const integration = this.parts.integrations.channelIntegration(row);
    if (!signatureMatches(integration.credentials.token ?? '', raw, signature)) {
      this.deps.log.warn({ integrationId }, 'Viber callback with a wrong or missing signature');
      throw unauthorized('Wrong or missing X-Viber-Content-Signature');
    }
    let event;
    try {
      event = parseEvent(raw);
    } catch (err) {
      if (!(err instanceof MalformedEventError)) throw err;
      this.deps.log.warn({ integrationId, reason: err.message }, 'malformed Viber callback');
      throw invalid(`Malformed callback: ${err.message}`);
    }
    if (row.deleted_at !== null && event.event !== 'webhook') throw notFound('Integration not found');
    let normalized;
    try {
      normalized = await normalizeEvent(this.kit, integration, event);
    } catch (err) {
      if (!(err instanceof MalformedEventError)) throw err;
      this.deps.log.warn({ integrationId, reason: err.message }, 'malformed Viber callback');
      throw invalid(`Malformed callback: ${err.message}`);
    }
    if (normalized.kind === 'ignored') {
      this.deps.log.debug({ integrationId, event: normalized.event, reason: normalized.reason }, 'Viber callback ignored');
      return 'ignored';
    }
    return outcome(await this.parts.ingest.ingest(row, normalized.incoming));
  }

  // --- shared ----------------------------------------------------------------------------------

  /** An integration of the type by id, whatever its account (the webhook URL names it). */
  private integration(type: string, id: number): Promise<IntegrationRow | undefined> {
    return integrationCache(this.deps.db).ofType(type, id);
  }

  /** Avatars are downloaded for customers Parley has none of yet (not on every message). */
  private async needsAvatar(integrationId: number, socialId: string): Promise<boolean> {
    const profile = await this.db
      .selectFrom('profiles')
      .select('avatar')
      .where('integration_id', '=', integrationId)
      .where('social_id', '=', socialId)
      .executeTakeFirst();
    return !profile?.avatar;
  }
}

const outcome = (result: IngestResult): InboundOutcome => (result.duplicate ? 'duplicate' : 'stored');
