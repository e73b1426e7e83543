import type { Readable } from 'node:stream';
import type { Attachment } from '../channels/channel.js';
import type { IntegrationRow, WidgetVisitorRow } from '../../db/schema.js';
import { recordEvent } from '../../events/outbox.js';
import type { RateLimiter } from '../auth/rate-limiter.js';
import type { Deps } from '../context.js';
import type { IngestService } from '../conversations/ingest.service.js';
import { fillEmptyContacts, listProfiles } from '../customers/customers.repo.js';
import { normalizePhone } from '../customers/phone.js';
import { defaultCountryOf } from '../accounts/account-settings.js';
import { customerView } from '../customers/customers.types.js';
import { AppError, invalid } from '../errors.js';
import type { FilesService } from '../files/files.service.js';
import type { StoredFile } from '../files/files.types.js';
import { uploadTypeOf } from '../files/media.js';
import { limitThen } from './widget-limits.js';
import type { Visitor } from './widget-sessions.js';
import * as repo from './widget.repo.js';
import { LIMITS, visitorAttachments, type VisitorMessage } from './widget.types.js';

export const HISTORY_PAGE = 50;
/** How precisely `widget_visitors.last_seen_at` follows a visitor's messages. */
const LAST_SEEN_RESOLUTION_MS = 60_000;
const CLIENT_ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * A visitor's conversation: messages through the ingest pipeline, attachments, history. Sizes and
 * rates are checked before anything is stored.
 */
export class WidgetConversation {
  constructor(
    private readonly deps: Deps,
    private readonly parts: { ingest: IngestService; files: FilesService },
    private readonly limits: { messagesPerVisitor: RateLimiter; messagesPerIp: RateLimiter; uploadsPerVisitor: RateLimiter },
  ) {}

  private get db() {
    return this.deps.db.kysely;
  }

  /**
   * A visitor's message: through the ingest pipeline (customer with a `widget` profile, `message`
   * channel, lead, events). `clientId` makes retries idempotent. Text or an uploaded file (or
   * both); empty -> 400; over the rate limits -> 429; nothing is stored for a refusal.
   */
  async sendMessage(visitor: Visitor, input: { clientId: string; text?: string; fileId?: string }, ip: string): Promise<VisitorMessage> {
    const text = (input.text ?? '').trim();
    if (!CLIENT_ID.test(input.clientId))
      throw invalid('clientId must be 1-64 letters, digits, _ or -', [{ path: 'body.clientId', message: 'is invalid' }]);
    if (text.length > LIMITS.text)
      throw invalid(`The message is longer than ${LIMITS.text} characters`, [{ path: 'body.text', message: 'is too long' }]);
    if (!text && !input.fileId)
      throw invalid('The message is empty', [{ path: 'body.text', message: 'is required without an attachment' }]);
    await limitThen(this.limits.messagesPerVisitor, `visitor:${visitor.row.id}`, this.limits.messagesPerIp, `ip:${ip}`);
    const { row, integration } = visitor;
    const externalId = `${row.public_id}:${input.clientId}`;
    // A retry answers the message stored first. With a file, that is looked up before the file
    // (which may be gone by now); a text-only retry is found by ingest itself, which saves every
    // message a round trip on PostgreSQL (docs/performance.md).
    if (input.fileId) {
      const again = await repo.messageByExternalId(this.db, integration.id, externalId);
      if (again) return presentVisitorMessage(again);
    }

    const attachments: Attachment[] = [];
    if (input.fileId) {
      const file = await this.parts.files.get(integration.account_id, input.fileId);
      if (!file) throw invalid('Unknown attachment', [{ path: 'body.fileId', message: 'is not an uploaded file' }]);
      attachments.push(this.parts.files.attachmentOf(file, uploadTypeOf(file.mime)));
    }
    const now = this.deps.clock.now();
    const result = await this.parts.ingest.ingest(integration, {
      externalId,
      datetime: now,
      sender: { socialId: row.public_id, name: row.name || `Visitor ${row.public_id.slice(-6)}`, login: row.email },
      channel: { externalId: row.public_id, type: 'message', name: row.name || null },
      text,
      attachments,
    });
    if (result.duplicate) {
      const stored = await repo.messageByExternalId(this.db, integration.id, externalId);
      if (stored) return presentVisitorMessage(stored);
    }
    if (result.isNewCustomer) await this.fillCustomerContacts(integration, row);
    // `last_seen_at` is kept to the minute: a write (and commit) per message would double the
    // cost of a conversation for a figure nobody reads at millisecond precision.
    if (now - row.last_seen_at >= LAST_SEEN_RESOLUTION_MS) await repo.updateVisitor(this.db, row.id, { last_seen_at: now });
    return { id: externalId, from: 'visitor', text, attachments: visitorAttachments(attachments), at: now };
  }

  /** A new customer gets the e-mail and phone of the pre-chat form (`customer.changed`). */
  private async fillCustomerContacts(integration: IntegrationRow, visitor: WidgetVisitorRow): Promise<void> {
    if (!visitor.email && !visitor.phone) return;
    // Read before the transaction: on SQLite its one connection is the transaction's until it ends.
    const phone = visitor.phone ? normalizePhone(visitor.phone, await defaultCountryOf(this.deps, integration.account_id)) : undefined;
    await this.db.transaction().execute(async (trx) => {
      const customerId = await repo.visitorCustomerId(trx, integration.id, visitor.public_id);
      if (customerId === undefined) return;
      const customer = await fillEmptyContacts(
        trx,
        customerId,
        { email: visitor.email || null, phone: phone?.phone ?? null, phoneAsTyped: phone?.asTyped ?? null },
        this.deps.clock.now(),
      );
      if (!customer) return;
      const profiles = await listProfiles(trx, customer.account_id, customer.id);
      await recordEvent(
        trx,
        {
          accountId: customer.account_id,
          type: 'customer.changed',
          payload: { customerId: customer.id, customer: customerView(customer, profiles) },
        },
        this.deps.clock.now(),
      );
    });
  }

  /** The visitor's own conversation, newest page first (`before`: the `cursor` of the previous page). */
  async history(visitor: Visitor, before: number | undefined): Promise<{ messages: VisitorMessage[]; cursor: number }> {
    const source = await repo.visitorSource(this.db, visitor.integration.id, visitor.row.public_id);
    if (!source) return { messages: [], cursor: -1 };
    const rows = await repo.historyRows(this.db, source.id, before, HISTORY_PAGE);
    const page = rows.slice(0, HISTORY_PAGE);
    return {
      messages: page.reverse().map(presentVisitorMessage),
      cursor: rows.length > HISTORY_PAGE ? (page[0]?.id ?? -1) : -1,
    };
  }

  /**
   * A visitor's attachment: the upload rules of FilesService (type sniffed, script types refused
   * 415) under the widget's own, smaller size limit (413).
   */
  async upload(visitor: Visitor, stream: Readable, meta: { filename?: string; mime: string }, ip: string): Promise<StoredFile> {
    await limitThen(this.limits.uploadsPerVisitor, `visitor:${visitor.row.id}`, this.limits.messagesPerIp, `ip:${ip}`);
    return this.parts.files.store(visitor.integration.account_id, capped(stream, this.maxUploadBytes), meta);
  }

  get maxUploadBytes(): number {
    return Math.min(this.deps.config.widgetUploadLimit, this.deps.config.uploadLimit);
  }
}

export function presentVisitorMessage(m: {
  external_id: string | null;
  id: number;
  incoming: number;
  text: string;
  attachments: string;
  created_at: number;
}): VisitorMessage {
  return {
    id: m.external_id ?? `m${m.id}`,
    from: m.incoming ? 'visitor' : 'agent',
    text: m.text,
    attachments: visitorAttachments(JSON.parse(m.attachments) as Attachment[]),
    at: m.created_at,
  };
}

/** The stream, failing with 413 past `max` bytes (FilesService then keeps nothing). */
async function* capped(source: Readable, max: number): AsyncGenerator<Uint8Array> {
  let total = 0;
  for await (const chunk of source as AsyncIterable<Uint8Array>) {
    total += chunk.byteLength;
    if (total > max) throw new AppError(413, 'payload_too_large', `The file is larger than the widget upload limit of ${max} bytes`);
    yield chunk;
  }
}
