import type { DialectName, Executor } from '../../db/database.js';
import type { IntegrationRow, LeadRow, MessageRow, ProfileRow, SourceRow } from '../../db/schema.js';

/** SQL of the messaging API: a lead's channels, history pages, idempotency and write-first counts. */

/** The channels of a lead: its customer's channels on the lead's integration, oldest first. */
export async function leadSources(db: Executor, lead: Pick<LeadRow, 'account_id' | 'customer_id' | 'integration_id'>): Promise<SourceRow[]> {
  return db
    .selectFrom('sources')
    .selectAll()
    .where('account_id', '=', lead.account_id)
    .where('customer_id', '=', lead.customer_id)
    .where('integration_id', '=', lead.integration_id)
    .orderBy('id')
    .execute();
}

/** One channel of a lead by its realId; undefined when the channel is not the lead's. */
export async function leadSource(
  db: Executor,
  lead: Pick<LeadRow, 'account_id' | 'customer_id' | 'integration_id'>,
  id: number,
): Promise<SourceRow | undefined> {
  return db
    .selectFrom('sources')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', lead.account_id)
    .where('customer_id', '=', lead.customer_id)
    .where('integration_id', '=', lead.integration_id)
    .executeTakeFirst();
}

/** The integration of a lead, also when it was disconnected since (its history stays readable). */
export async function integrationOfLead(db: Executor, lead: Pick<LeadRow, 'account_id' | 'integration_id'>): Promise<IntegrationRow> {
  return db
    .selectFrom('integrations')
    .selectAll()
    .where('id', '=', lead.integration_id)
    .where('account_id', '=', lead.account_id)
    .executeTakeFirstOrThrow();
}

/** The newest message id of the lead per channel: which channel the lead spoke on last. */
export async function latestMessagePerSource(db: Executor, leadId: number): Promise<Map<number, number>> {
  const rows = await db
    .selectFrom('messages')
    .select(['source_id', (eb) => eb.fn.max('id').as('last_id')])
    .where('lead_id', '=', leadId)
    .groupBy('source_id')
    .execute();
  return new Map(rows.map((r) => [Number(r.source_id), Number(r.last_id)]));
}

/**
 * One history page: messages of the lead on the channel, newest first, older than `before` when
 * given. Asks for one more than `limit` so the caller knows whether an earlier page exists.
 */
export async function historyPage(
  db: Executor,
  leadId: number,
  sourceId: number,
  before: number | undefined,
  limit: number,
): Promise<MessageRow[]> {
  let query = db.selectFrom('messages').selectAll().where('lead_id', '=', leadId).where('source_id', '=', sourceId);
  if (before !== undefined) query = query.where('id', '<', before);
  return query.orderBy('id', 'desc').limit(limit + 1).execute();
}

export async function isMessageOf(db: Executor, id: number, leadId: number, sourceId: number): Promise<boolean> {
  const row = await db
    .selectFrom('messages')
    .select('id')
    .where('id', '=', id)
    .where('lead_id', '=', leadId)
    .where('source_id', '=', sourceId)
    .executeTakeFirst();
  return !!row;
}

export async function profilesByIds(db: Executor, ids: number[]): Promise<Map<number, ProfileRow>> {
  if (!ids.length) return new Map();
  const rows = await db.selectFrom('profiles').selectAll().where('id', 'in', ids).execute();
  return new Map(rows.map((p) => [p.id, p]));
}

export async function messageOfLead(db: Executor, leadId: number, id: number): Promise<MessageRow | undefined> {
  return db.selectFrom('messages').selectAll().where('id', '=', id).where('lead_id', '=', leadId).executeTakeFirst();
}

/** Messages a send with this `customId` stored in the lead (index messages_custom_idx). */
export async function messagesByCustomId(db: Executor, leadId: number, customId: string): Promise<MessageRow[]> {
  return db
    .selectFrom('messages')
    .selectAll()
    .where('lead_id', '=', leadId)
    .where('custom_id', '=', customId)
    .orderBy('id')
    .execute();
}

export async function sourcesByIds(db: Executor, ids: number[]): Promise<Map<number, SourceRow>> {
  if (!ids.length) return new Map();
  const rows = await db.selectFrom('sources').selectAll().where('id', 'in', ids).execute();
  return new Map(rows.map((s) => [s.id, s]));
}

/** The lead row inside a transaction, locked on PostgreSQL so concurrent messages update it in turn. */
export async function lockLead(db: Executor, dialect: DialectName, id: number): Promise<LeadRow> {
  let query = db.selectFrom('leads').selectAll().where('id', '=', id);
  if (dialect === 'postgres') query = query.forUpdate();
  return query.executeTakeFirstOrThrow();
}

/** Serializes write-first reservations of one integration (PostgreSQL; SQLite transactions already are). */
export async function lockIntegration(db: Executor, dialect: DialectName, id: number): Promise<void> {
  if (dialect === 'postgres') await db.selectFrom('integrations').select('id').where('id', '=', id).forUpdate().execute();
}

/** The customer's newest `message` channel on an integration. */
export async function latestMessageSource(db: Executor, customerId: number, integrationId: number): Promise<SourceRow | undefined> {
  return db
    .selectFrom('sources')
    .selectAll()
    .where('customer_id', '=', customerId)
    .where('integration_id', '=', integrationId)
    .where('type', '=', 'message')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

export async function isWriteFirstContact(db: Executor, integrationId: number, socialId: string): Promise<boolean> {
  const row = await db
    .selectFrom('write_first_contacts')
    .select('id')
    .where('integration_id', '=', integrationId)
    .where('social_id', '=', socialId)
    .executeTakeFirst();
  return !!row;
}

export async function countWriteFirstContacts(db: Executor, integrationId: number, day: number): Promise<number> {
  const row = await db
    .selectFrom('write_first_contacts')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('integration_id', '=', integrationId)
    .where('day', '=', day)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function insertWriteFirstContact(
  db: Executor,
  values: { accountId: number; integrationId: number; socialId: string; day: number; now: number },
): Promise<number> {
  const row = await db
    .insertInto('write_first_contacts')
    .values({
      account_id: values.accountId,
      integration_id: values.integrationId,
      social_id: values.socialId,
      day: values.day,
      created_at: values.now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

export async function deleteWriteFirstContact(db: Executor, id: number): Promise<void> {
  await db.deleteFrom('write_first_contacts').where('id', '=', id).execute();
}
