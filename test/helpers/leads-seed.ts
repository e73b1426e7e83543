import type { LeadStatusType, StatusRow } from '../../src/db/schema.js';
import type { Harness } from './harness.js';

/**
 * Leads with messages, tags and channels written straight into the database: the leads tests
 * need hundreds of varied leads, faster than the ingest pipeline makes them. The rows are kept
 * consistent the way ingest keeps them (last message, unread count, status type).
 */

export interface SeededLead {
  id: number;
  integrationId: number;
  integrationType: string;
  customerId: number;
  userId: number | null;
  statusId: number | null;
  statusType: LeadStatusType;
  unreadCount: number;
  lastMessageAt: number;
  lastMessageIncoming: number | null;
  createdAt: number;
  responseTime: number | null;
  tags: string[];
  amount: number;
  /** Channel types of the lead's messages. */
  sourceTypes: string[];
  messageCount: number;
}

export interface LeadSpec {
  integration: { id: number; type: string };
  customerId: number;
  userId?: number | null;
  status?: StatusRow | null;
  createdAt: number;
  /** Oldest first; `at` strictly increasing is not required. */
  messages?: Array<{ at: number; incoming: boolean; unread?: boolean; sourceType?: string; text?: string }>;
  tags?: string[];
  responseTime?: number | null;
  amount?: number;
}

export class LeadSeeder {
  private sources = new Map<string, number>();
  private tagIds = new Map<string, number>();
  private seq = 0;

  constructor(
    private readonly h: Harness,
    readonly accountId: number,
  ) {}

  private get db() {
    return this.h.database.db.kysely;
  }

  async customer(name = 'Customer', extra: { email?: string; phone?: string } = {}): Promise<number> {
    const now = this.h.clock.now();
    const row = await this.db
      .insertInto('customers')
      .values({
        account_id: this.accountId,
        name,
        login: `login-${++this.seq}`,
        avatar: `https://a.example/${this.seq}.png`,
        email: extra.email ?? null,
        phone: extra.phone ?? null,
        created_at: now,
        updated_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return row.id;
  }

  private async source(integrationId: number, customerId: number, type: string): Promise<number> {
    const key = `${integrationId}:${customerId}:${type}`;
    const known = this.sources.get(key);
    if (known) return known;
    const row = await this.db
      .insertInto('sources')
      .values({
        account_id: this.accountId,
        integration_id: integrationId,
        customer_id: customerId,
        external_id: `ch-${key}`,
        type,
        sender: `s-${customerId}`,
        created_at: this.h.clock.now(),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    this.sources.set(key, row.id);
    return row.id;
  }

  async tag(tag: string): Promise<number> {
    const known = this.tagIds.get(tag);
    if (known) return known;
    const row = await this.db
      .insertInto('tags')
      .values({ account_id: this.accountId, tag, tag_key: tag.toLowerCase(), created_at: this.h.clock.now() })
      .returning('id')
      .executeTakeFirstOrThrow();
    this.tagIds.set(tag, row.id);
    return row.id;
  }

  async lead(spec: LeadSpec): Promise<SeededLead> {
    const messages = spec.messages ?? [];
    const statusType: LeadStatusType = spec.status ? spec.status.type : 'inbox';
    const lead = await this.db
      .insertInto('leads')
      .values({
        account_id: this.accountId,
        integration_id: spec.integration.id,
        customer_id: spec.customerId,
        user_id: spec.userId ?? null,
        status_id: spec.status?.id ?? null,
        status_type: statusType,
        amount: spec.amount ?? 0,
        last_message_at: spec.createdAt,
        created_at: spec.createdAt,
        updated_at: spec.createdAt,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    let last: { id: number; at: number; incoming: number } | null = null;
    let unread = 0;
    const sourceTypes = new Set<string>();
    for (const m of messages) {
      const type = m.sourceType ?? 'message';
      sourceTypes.add(type);
      const sourceId = await this.source(spec.integration.id, spec.customerId, type);
      const isUnread = m.incoming && (m.unread ?? true);
      if (isUnread) unread++;
      const row = await this.db
        .insertInto('messages')
        .values({
          account_id: this.accountId,
          lead_id: lead.id,
          source_id: sourceId,
          integration_id: spec.integration.id,
          external_id: `m-${++this.seq}`,
          incoming: m.incoming ? 1 : 0,
          text: m.text ?? `text ${this.seq}`,
          unread: isUnread ? 1 : 0,
          created_at: m.at,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      if (!last || m.at >= last.at) last = { id: row.id, at: m.at, incoming: m.incoming ? 1 : 0 };
    }
    const responseTime = last && last.incoming === 0 ? (spec.responseTime ?? 1000) : null;
    await this.db
      .updateTable('leads')
      .set({
        unread_count: unread,
        last_message_id: last?.id ?? null,
        last_message_at: last?.at ?? spec.createdAt,
        last_message_incoming: last ? last.incoming : null,
        response_time: responseTime,
      })
      .where('id', '=', lead.id)
      .execute();
    const tags = [...new Set(spec.tags ?? [])];
    for (const t of tags) {
      await this.db
        .insertInto('lead_tags')
        .values({ account_id: this.accountId, lead_id: lead.id, tag_id: await this.tag(t), created_at: spec.createdAt })
        .execute();
    }
    return {
      id: lead.id,
      integrationId: spec.integration.id,
      integrationType: spec.integration.type,
      customerId: spec.customerId,
      userId: spec.userId ?? null,
      statusId: spec.status?.id ?? null,
      statusType,
      unreadCount: unread,
      lastMessageAt: last?.at ?? spec.createdAt,
      lastMessageIncoming: last ? last.incoming : null,
      createdAt: spec.createdAt,
      responseTime,
      tags,
      amount: spec.amount ?? 0,
      sourceTypes: [...sourceTypes],
      messageCount: messages.length,
    };
  }
}

export async function statusesOf(h: Harness, accountId: number): Promise<StatusRow[]> {
  return h.database.db.kysely.selectFrom('statuses').selectAll().where('account_id', '=', accountId).orderBy('id').execute();
}

/** List order: newest last message first, then newest lead first. */
export const listOrder = (a: SeededLead, b: SeededLead) => b.lastMessageAt - a.lastMessageAt || b.id - a.id;
