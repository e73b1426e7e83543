import crypto from 'node:crypto';
import type { IntegrationRow } from '../../db/schema.js';
import type { Deps } from '../../domain/context.js';
import { AppError, invalid, notFound, unauthorized } from '../../domain/errors.js';
import { channelAppError } from '../../domain/integrations/channel-errors.js';
import { integrationCache } from '../../domain/integrations/integration-cache.js';
import { liveIntegrationsByIdentifier } from '../../domain/integrations/integrations.repo.js';
import type { IntegrationsService } from '../../domain/integrations/integrations.service.js';
import type { ChannelIntegration } from '../../domain/channels/channel.js';
import { sameSecret, type BotKit } from '../bots/bot-kit.js';

/**
 * Meta's webhooks, for every Meta product (WhatsApp Cloud API today; Messenger and Instagram plug
 * in the same way): one address per integration, `/channels/meta/<integrationId>`.
 * - `GET` is Meta's verification handshake: `hub.mode=subscribe`, `hub.verify_token` (generated
 *   per integration, shown to the owner), `hub.challenge` echoed back.
 * - `POST` carries `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body keyed with the
 *   app secret>`: checked before the body is read (401 before 400), then the payload
 *   `{object, entry: [...]}` goes to the product adapter of the integration's type. Meta retries
 *   anything but a 200 for days, so the answer comes only after the product committed its changes.
 */

export class MalformedWebhookError extends Error {}

/** The envelope every Meta webhook shares; `entry[]` items are the product's to read. */
export interface MetaWebhookPayload {
  object: string;
  entry: Array<Record<string, unknown>>;
}

/** What one delivery did: messages stored, redeliveries recognised, statuses applied, what was left aside and why. */
export interface MetaWebhookOutcome {
  stored: number;
  duplicates: number;
  statuses: number;
  ignored: string[];
}

/** One Meta product (WhatsApp Cloud API, Messenger, Instagram): the mapping of its webhook payloads. */
export interface MetaProduct {
  /** Integration types it serves. */
  readonly types: readonly string[];
  /** The webhook `object` values it accepts (`whatsapp_business_account`, `page`, `instagram`). */
  readonly objects: readonly string[];
  /**
   * Handles a verified delivery. Checks the whole payload before storing anything (a malformed one
   * throws MalformedWebhookError: 400, nothing stored); returns after its changes are committed.
   */
  handle(row: IntegrationRow, integration: ChannelIntegration, payload: MetaWebhookPayload): Promise<MetaWebhookOutcome>;
  /** Reads the payload as {@link handle} would, storing nothing: throws MalformedWebhookError when it is malformed. */
  check?(integration: ChannelIntegration, payload: MetaWebhookPayload): void;
}

export function metaSignature(appSecret: string, raw: Buffer | string): string {
  return `sha256=${crypto.createHmac('sha256', appSecret).update(raw).digest('hex')}`;
}

export function metaSignatureMatches(appSecret: string, raw: Buffer, header: string | undefined): boolean {
  return !!appSecret && typeof header === 'string' && sameSecret(header.trim().toLowerCase(), metaSignature(appSecret, raw));
}

export class MetaWebhooks {
  private readonly products = new Map<string, MetaProduct>();

  constructor(
    private readonly deps: Deps,
    private readonly kit: Pick<BotKit, 'config' | 'webhookSecret'>,
    private readonly integrations: Pick<IntegrationsService, 'channelIntegration'>,
  ) {}

  register(product: MetaProduct): void {
    for (const type of product.types) this.products.set(type, product);
  }

  /** The per-integration verify token the owner pastes into the Meta app: derived, nothing stored. */
  verifyToken(integrationId: number): string {
    return this.kit.webhookSecret('meta-verify-token', integrationId);
  }

  /** The callback URL of an integration, or null when PARLEY_PUBLIC_URL is not set. */
  webhookUrl(integrationId: number): string | null {
    const base = this.kit.config.publicUrl?.replace(/\/+$/, '');
    return base ? `${base}/channels/meta/${integrationId}` : null;
  }

  /** What the owner pastes into the Meta app's webhook settings, for integration types served here. */
  webhookInfo(row: Pick<IntegrationRow, 'id' | 'type'>): { url: string | null; verifyToken: string } | undefined {
    return this.products.has(row.type) ? { url: this.webhookUrl(row.id), verifyToken: this.verifyToken(row.id) } : undefined;
  }

  /** `GET`: the handshake. Answers the challenge to echo; a wrong mode or token -> 403. */
  async verify(integrationId: number, query: Record<string, unknown>): Promise<string> {
    const row = await this.live(integrationId);
    const mode = query['hub.mode'];
    const token = query['hub.verify_token'];
    const challenge = query['hub.challenge'];
    if (mode !== 'subscribe' || typeof token !== 'string' || !sameSecret(token, this.verifyToken(row.id))) {
      this.deps.log.warn({ integrationId }, 'Meta webhook verification with a wrong mode or verify token');
      throw new AppError(403, 'forbidden', 'Wrong hub.mode or hub.verify_token');
    }
    if (typeof challenge !== 'string' || !challenge || challenge.length > 512) throw invalid('hub.challenge is missing');
    return challenge;
  }

  /** `POST`: signature over the raw body, then the product's handling. */
  async deliver(integrationId: number, signature: string | undefined, raw: Buffer): Promise<MetaWebhookOutcome> {
    const row = await this.live(integrationId);
    const product = this.products.get(row.type);
    if (!product) throw notFound('Integration not found');
    const integration = this.integrations.channelIntegration(row);
    if (!metaSignatureMatches(integration.credentials.appSecret ?? '', raw, signature)) {
      this.deps.log.warn({ integrationId }, 'Meta webhook with a wrong or missing X-Hub-Signature-256');
      throw unauthorized('Wrong or missing X-Hub-Signature-256');
    }
    try {
      const payload = parsePayload(raw);
      if (!product.objects.includes(payload.object))
        throw new MalformedWebhookError(`object "${payload.object}" is not one this integration receives`);
      const siblings = await this.siblings(row, integration, payload.object);
      for (const s of siblings) s.product.check?.(s.integration, payload);
      const outcome = await product.handle(row, integration, payload);
      for (const s of siblings) {
        const more = await s.product.handle(s.row, s.integration, payload);
        outcome.stored += more.stored;
        outcome.duplicates += more.duplicates;
        outcome.statuses += more.statuses;
      }
      return outcome;
    } catch (err) {
      // Meta failing while a media file is fetched: 502/504, and Meta delivers the webhook again.
      if (!(err instanceof MalformedWebhookError)) throw channelAppError(err);
      this.deps.log.warn({ integrationId, reason: err.message }, 'malformed Meta webhook');
      throw invalid(`Malformed webhook: ${err.message}`);
    }
  }

  /**
   * A Meta app has one callback URL per object (`page`, `instagram`), so one address receives a
   * Page's (or Instagram account's) direct messages and its comments: the other integration of the
   * same account and external account (`identifier`) with the same app secret gets the delivery too,
   * and each takes its part (`messaging[]` or `changes[]`).
   */
  private async siblings(row: IntegrationRow, integration: ChannelIntegration, object: string) {
    const types = [...this.products.entries()].filter(([type, p]) => type !== row.type && p.objects.includes(object)).map(([type]) => type);
    const rows = await liveIntegrationsByIdentifier(this.deps.db.kysely, row.account_id, types, row.identifier);
    return rows
      .filter((r) => r.status === 'active')
      .map((r) => ({ row: r, integration: this.integrations.channelIntegration(r), product: this.products.get(r.type) as MetaProduct }))
      .filter((s) => !!s.integration.credentials.appSecret && s.integration.credentials.appSecret === integration.credentials.appSecret);
  }

  /** A live integration of a Meta type by id, whatever its account (the URL names it); else 404. */
  private async live(id: number): Promise<IntegrationRow> {
    const row = await integrationCache(this.deps.db).live(id);
    if (!row || !this.products.has(row.type)) throw notFound('Integration not found');
    return row;
  }
}

function parsePayload(raw: Buffer): MetaWebhookPayload {
  const text = raw.toString('utf8');
  // NUL cannot be stored (PostgreSQL text) and is never meaningful in a message: refused whole.
  if (/\\u0000/i.test(text)) throw new MalformedWebhookError('NUL characters are not accepted');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new MalformedWebhookError('body is not JSON');
  }
  const p = parsed as Partial<MetaWebhookPayload> | null;
  if (typeof p !== 'object' || p === null || typeof p.object !== 'string' || !Array.isArray(p.entry)) {
    throw new MalformedWebhookError('a webhook needs object and entry[]');
  }
  if (!p.entry.every((e) => typeof e === 'object' && e !== null && !Array.isArray(e)))
    throw new MalformedWebhookError('entry[] items must be objects');
  return p as MetaWebhookPayload;
}
