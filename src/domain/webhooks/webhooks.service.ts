import crypto from 'node:crypto';
import type { WebhookRow } from '../../db/schema.js';
import { isUniqueViolation } from '../../db/errors.js';
import { outboxSignal } from '../../events/outbox.js';
import { EVENT_TYPES, type EventType } from '../../events/event-types.js';
import { BlockedAddressError, checkHost } from '../../net/address-guard.js';
import type { AuthContext } from '../auth/auth-context.js';
import type { Deps } from '../context.js';
import { conflict, invalid, notFound } from '../errors.js';
import { requireOwner } from '../policy/policy.js';
import * as repo from './webhooks.repo.js';
import { DELIVERY_LIST_DEFAULT, type DeliveryView, type NewWebhookInput, type WebhookPatch, type WebhookRecord } from './webhooks.types.js';

const DUPLICATE = 'This server already exists';

/** What the calling API version decides about webhooks (docs/api/versions.md). */
export interface WebhookVersionRules {
  version: string;
  webhookLimit: number;
}

/** Webhook endpoints of an account (docs/api/webhooks.md). Owner-only. */
export class WebhooksService {
  constructor(private readonly deps: Deps) {}

  async list(auth: AuthContext): Promise<WebhookRecord[]> {
    requireOwner(auth);
    return (await repo.listWebhooks(this.deps.db.kysely, auth.accountId)).map(record);
  }

  async create(auth: AuthContext, input: NewWebhookInput, rules: WebhookVersionRules): Promise<WebhookRecord> {
    requireOwner(auth);
    const db = this.deps.db.kysely;
    const url = await this.checkUrl(input.url);
    const events = checkEvents(input.events);
    if ((await repo.countWebhooks(db, auth.accountId)) >= rules.webhookLimit) {
      throw conflict(`At most ${rules.webhookLimit} webhooks per account`, 'limit_reached');
    }
    if (await repo.urlTaken(db, auth.accountId, url)) throw conflict(DUPLICATE);
    try {
      const row = await repo.insertWebhook(db, {
        account_id: auth.accountId,
        url,
        name: input.name ?? '',
        status: 1,
        events,
        secret: newSecret(),
        api_version: rules.version,
        failing_since: null,
        created_at: this.deps.clock.now(),
      });
      return record(row);
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(DUPLICATE);
      throw err;
    }
  }

  async update(auth: AuthContext, id: number, patch: WebhookPatch): Promise<WebhookRecord> {
    requireOwner(auth);
    const db = this.deps.db.kysely;
    const current = await repo.findWebhook(db, auth.accountId, id);
    if (!current) throw notFound('Webhook not found');
    const set: Parameters<typeof repo.updateWebhook>[3] = {};
    if (patch.url !== undefined) {
      set.url = await this.checkUrl(patch.url);
      if (await repo.urlTaken(db, auth.accountId, set.url, id)) throw conflict(DUPLICATE);
    }
    if (patch.name !== undefined) set.name = patch.name;
    if (patch.events !== undefined) set.events = checkEvents(patch.events);
    if (patch.status !== undefined) {
      set.status = patch.status;
      // Re-enabling starts the "failing for 5 days" count afresh; held deliveries resume.
      if (patch.status === 1) set.failing_since = null;
    }
    if (!Object.keys(set).length) return record(current);
    try {
      const row = await repo.updateWebhook(db, auth.accountId, id, set);
      if (!row) throw notFound('Webhook not found');
      if (patch.status === 1 && current.status === 0) {
        await repo.resumeDeliveries(db, id, this.deps.clock.now());
        outboxSignal.emit('recorded', 0);
      }
      return record(row);
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(DUPLICATE);
      throw err;
    }
  }

  async remove(auth: AuthContext, id: number): Promise<void> {
    requireOwner(auth);
    if (!(await repo.deleteWebhook(this.deps.db.kysely, auth.accountId, id))) throw notFound('Webhook not found');
  }

  async deliveries(auth: AuthContext, id: number, opts: { limit?: number; before?: number }): Promise<DeliveryView[]> {
    requireOwner(auth);
    const db = this.deps.db.kysely;
    if (!(await repo.findWebhook(db, auth.accountId, id))) throw notFound('Webhook not found');
    const rows = await repo.listDeliveries(db, id, opts.limit ?? DELIVERY_LIST_DEFAULT, opts.before);
    const attempts = await repo.attemptsOf(
      db,
      rows.map((r) => r.id),
    );
    return rows.map((r) => ({
      id: r.id,
      eventId: r.event_id,
      type: r.type,
      leadId: r.lead_id,
      webhookMessageId: r.message_id,
      status: r.status,
      attempts: r.attempts,
      nextAttemptAt: r.status === 'pending' ? r.next_attempt_at : null,
      lastStatusCode: r.last_status_code,
      lastError: r.last_error,
      createdAt: r.created_at,
      deliveredAt: r.delivered_at,
      log: attempts
        .filter((a) => a.delivery_id === r.id)
        .map((a) => ({ at: a.at, statusCode: a.status_code, durationMs: a.duration_ms, error: a.error })),
    }));
  }

  /** Sends one delivery again: back to pending, due now (delivered and dead ones alike). */
  async retry(auth: AuthContext, id: number, deliveryId: number): Promise<DeliveryView> {
    requireOwner(auth);
    const db = this.deps.db.kysely;
    if (!(await repo.findWebhook(db, auth.accountId, id))) throw notFound('Webhook not found');
    if (!(await repo.findDelivery(db, id, deliveryId))) throw notFound('Delivery not found');
    if (!(await repo.requeueDelivery(db, id, deliveryId, this.deps.clock.now()))) {
      throw conflict('The delivery is being sent right now');
    }
    outboxSignal.emit('recorded', 0);
    const [view] = (await this.deliveries(auth, id, { limit: 1, before: deliveryId + 1 })).filter((d) => d.id === deliveryId);
    if (!view) throw notFound('Delivery not found');
    return view;
  }

  /** docs/api/webhooks.md: http(s) only, no credentials, no private addresses (unless configured). */
  private async checkUrl(raw: string): Promise<string> {
    const url = raw.trim();
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw invalid('url must be an absolute http or https URL', [{ path: 'body.url', message: 'is not a URL' }]);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw invalid('url must use http or https', [{ path: 'body.url', message: 'must use http or https' }]);
    }
    if (parsed.username || parsed.password) {
      throw invalid('url must not contain credentials', [{ path: 'body.url', message: 'must not contain credentials' }]);
    }
    if (!this.deps.config.webhookAllowPrivate) {
      try {
        await checkHost(parsed.hostname);
      } catch (err) {
        if (err instanceof BlockedAddressError) {
          throw invalid(`url refused: ${err.message}`, [{ path: 'body.url', message: 'is a private or reserved address' }]);
        }
        throw invalid(`url refused: ${parsed.hostname} does not resolve`, [{ path: 'body.url', message: 'does not resolve' }]);
      }
    }
    return url;
  }
}

function checkEvents(events: string[] | null | undefined): string | null {
  if (events === undefined || events === null) return null;
  const unknown = events.filter((e) => !(EVENT_TYPES as readonly string[]).includes(e));
  if (unknown.length) {
    throw invalid(`Unknown event type: ${unknown.join(', ')}`, [{ path: 'body.events', message: `unknown: ${unknown.join(', ')}` }]);
  }
  return JSON.stringify([...new Set(events)]);
}

export function newSecret(): string {
  return `whsec_${crypto.randomBytes(24).toString('base64')}`;
}

export function record(row: WebhookRow): WebhookRecord {
  return {
    id: row.id,
    url: row.url,
    name: row.name,
    status: row.status,
    events: row.events === null ? null : (JSON.parse(row.events) as EventType[]),
    secret: row.secret,
  };
}
