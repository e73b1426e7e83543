import type { IntegrationRow } from '../../db/schema.js';
import type { Deps } from '../../domain/context.js';
import type { ProviderHistoryService } from '../../domain/conversations/provider-history.service.js';
import { invalid, notFound, unauthorized } from '../../domain/errors.js';
import type { ChannelAdapter } from '../../domain/channels/channel.js';
import { sameSecret } from '../bots/bot-kit.js';
import type { BotChannels, InboundOutcome } from '../bots/bot-channels.js';
import { OkAdapter } from '../ok/ok-adapter.js';
import { MalformedOkEvent, normalizeOkEvent } from '../ok/ok-events.js';
import { VkAdapter } from '../vk/vk-adapter.js';
import { MalformedVkEvent, normalizeVkEvent } from '../vk/vk-events.js';
import { integrationCache } from '../../domain/integrations/integration-cache.js';
import * as repo from './social-channels.repo.js';
import { isObject, parseProviderJson } from './social-kit.js';
import type { ProviderJson } from '../provider-json.js';

/** How long handled event ids are remembered: VK stops redelivering long before. */
const EVENT_IDS_KEPT_MS = 7 * 24 * 3600 * 1000;

/**
 * The social network channels (VK `social2_group`; OK `social3` in ok-channels): their adapters and
 * the inbound side that touches the database: provider callbacks (the caller proven first, nothing
 * read before), events read by long polling, and their durable polling cursors. An event is
 * acknowledged to the provider only after it is committed. Built on the bot channels' kit (file
 * storage, `auth failure`, derived webhook secrets).
 */
export class SocialChannels {
  readonly vk: VkAdapter;
  readonly ok: OkAdapter;

  constructor(
    private readonly deps: Deps,
    private readonly bots: BotChannels,
    private readonly history: ProviderHistoryService,
  ) {
    this.vk = new VkAdapter(bots.kit);
    this.ok = new OkAdapter(bots.kit);
  }

  get adapters(): ChannelAdapter[] {
    return [this.vk, this.ok];
  }

  private get db() {
    return this.deps.db.kysely;
  }

  get kit() {
    return this.bots.kit;
  }

  channelIntegration(row: IntegrationRow) {
    return this.bots.parts.integrations.channelIntegration(row);
  }

  // --- VK --------------------------------------------------------------------------------------

  /**
   * `POST /channels/vk/<id>` (Callback API): answers the text VK expects, `ok` once the event is
   * committed, or the confirmation string. The `confirmation` call comes while the integration is
   * being connected (`groups.addCallbackServer`), that is for a draft too; every other event needs
   * the secret Parley registered and a live integration.
   */
  async vkCallback(integrationId: number, raw: Buffer): Promise<string> {
    const row = await this.integration('social2_group', integrationId);
    if (!row) throw notFound('Integration not found');
    let body: unknown;
    try {
      body = parseProviderJson(raw.toString('utf8'));
    } catch {
      this.deps.log.warn({ integrationId }, 'VK callback body is not JSON');
      throw invalid('The callback is not JSON');
    }
    if (!isObject(body) || typeof body.type !== 'string') throw invalid('A VK callback needs a type');
    const integration = this.channelIntegration(row);
    const secretGiven = typeof body.secret === 'string' ? body.secret : undefined;
    const secretOk = sameSecret(secretGiven, this.vk.callbackSecret(row.id));
    if (body.type === 'confirmation' ? secretGiven !== undefined && !secretOk : !secretOk) {
      this.deps.log.warn({ integrationId, type: body.type }, 'VK callback with a wrong or missing secret');
      throw unauthorized('Wrong or missing secret');
    }
    if (String(body.group_id) !== (integration.credentials.groupId ?? '').trim().replace(/^-/, '')) {
      this.deps.log.warn({ integrationId, groupId: body.group_id }, 'VK callback for another community');
      throw invalid('The callback is for a community this integration does not serve');
    }
    if (body.type === 'confirmation') return this.vk.confirmationCode(integration);
    if (row.deleted_at !== null) throw notFound('Integration not found');
    await this.vkEvent(row, body);
    return 'ok';
  }

  /** One event (callback or long poll): stored, a redelivery, or ignored; malformed -> 400. */
  async vkEvent(row: IntegrationRow, event: ProviderJson): Promise<InboundOutcome> {
    return this.once(row, event.event_id, () => this.handleVkEvent(row, event));
  }

  private async handleVkEvent(row: IntegrationRow, event: ProviderJson): Promise<InboundOutcome> {
    const integration = this.channelIntegration(row);
    let normalized;
    try {
      normalized = await normalizeVkEvent(
        {
          kit: this.bots.kit,
          api: this.vk.api(integration),
          integration: { accountId: row.account_id, login: row.login, groupId: Number(row.external_id) || 0 },
          needProfile: (socialId) => this.needsProfile(row.id, socialId),
        },
        String(event.type),
        event.object,
      );
    } catch (err) {
      if (!(err instanceof MalformedVkEvent)) throw err;
      this.deps.log.warn({ integrationId: row.id, reason: err.message, eventId: event.event_id }, 'malformed VK event');
      throw invalid(`Malformed event: ${err.message}`);
    }
    switch (normalized.kind) {
      case 'incoming':
        return (await this.bots.parts.ingest.ingest(row, normalized.incoming)).duplicate ? 'duplicate' : 'stored';
      case 'outgoing':
        return (await this.history.recordExternalOutgoing(row, normalized.outgoing)) ? 'stored' : 'duplicate';
      case 'edit':
        return (await this.history.applyEdit(row, normalized.externalId, normalized)) ? 'stored' : 'ignored';
      default:
        this.deps.log.debug({ integrationId: row.id, eventId: event.event_id, reason: normalized.reason }, 'VK event ignored');
        return 'ignored';
    }
  }

  // --- OK --------------------------------------------------------------------------------------

  /**
   * `POST /channels/ok/<id>?key=<secret>`: OK signs nothing, so the subscribed address carries a
   * secret derived for the integration; then the notification, committed before the 200.
   */
  async okWebhook(integrationId: number, key: string | undefined, raw: Buffer): Promise<InboundOutcome> {
    const row = await this.integration('social3', integrationId);
    if (!row || row.deleted_at !== null) throw notFound('Integration not found');
    if (!sameSecret(key, this.ok.webhookKey(row.id))) {
      this.deps.log.warn({ integrationId }, 'OK notification without the integration key');
      throw unauthorized('Wrong or missing key');
    }
    let body: unknown;
    try {
      body = parseProviderJson(raw.toString('utf8'));
    } catch {
      throw invalid('The notification is not JSON');
    }
    if (!isObject(body)) throw invalid('A notification is a JSON object');
    return this.okEvent(row, body);
  }

  /** One notification (webhook or long polling): stored, a redelivery (same `mid`), or ignored; malformed -> 400. */
  async okEvent(row: IntegrationRow, event: ProviderJson): Promise<InboundOutcome> {
    const mid = isObject(event.message) ? event.message.mid : undefined;
    return this.once(row, mid, () => this.handleOkEvent(row, event));
  }

  private async handleOkEvent(row: IntegrationRow, event: ProviderJson): Promise<InboundOutcome> {
    let normalized;
    try {
      normalized = await normalizeOkEvent(this.bots.kit, row.account_id, event);
    } catch (err) {
      if (!(err instanceof MalformedOkEvent)) throw err;
      this.deps.log.warn({ integrationId: row.id, reason: err.message }, 'malformed OK notification');
      throw invalid(`Malformed notification: ${err.message}`);
    }
    if (normalized.kind === 'ignored') return 'ignored';
    return (await this.bots.parts.ingest.ingest(row, normalized.incoming)).duplicate ? 'duplicate' : 'stored';
  }

  // --- shared ----------------------------------------------------------------------------------

  /**
   * Handles a provider event once per id (VK `event_id`, OK `mid`): a redelivery is answered at once,
   * before anything is downloaded or asked of the provider again, and an old edit delivered again
   * cannot undo a newer one. The id is recorded after the event is handled; a crash in between
   * leaves it to the stored message's own id to recognize the redelivery.
   */
  private async once(row: IntegrationRow, id: unknown, handle: () => Promise<InboundOutcome>): Promise<InboundOutcome> {
    const eventId = typeof id === 'string' && id.length > 0 && id.length <= 200 ? id : undefined;
    if (eventId && (await repo.eventHandled(this.db, row.id, eventId))) return 'duplicate';
    const outcome = await handle();
    if (eventId) {
      const now = this.deps.clock.now();
      await repo.recordEventHandled(this.db, row.id, eventId, now, now - EVENT_IDS_KEPT_MS);
    }
    return outcome;
  }

  /** Active integrations of the type that long polling serves (no PARLEY_PUBLIC_URL). */
  pollableIntegrations(type: string, id?: number): Promise<IntegrationRow[]> {
    return repo.activeIntegrations(this.db, type, id);
  }

  pollCursor(integrationId: number): Promise<string | undefined> {
    return repo.pollCursor(this.db, integrationId);
  }

  savePollCursor(integrationId: number, cursor: string): Promise<void> {
    return repo.savePollCursor(this.db, integrationId, cursor, this.deps.clock.now());
  }

  private integration(type: string, id: number): Promise<IntegrationRow | undefined> {
    return integrationCache(this.deps.db).ofType(type, id);
  }

  /** Profiles are read from the provider for customers Parley has no photo of yet (not on every message). */
  private async needsProfile(integrationId: number, socialId: string): Promise<boolean> {
    return !(await repo.profileAvatar(this.db, integrationId, socialId));
  }
}
