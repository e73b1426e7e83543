import { sql, type Insertable, type RawBuilder } from 'kysely';
import { executeNamed, type Executor } from '../../db/database.js';
import type { CustomerRow, LeadRow, MessageRow, NewMessage, ProfileRow, ProfilesTable, SourceRow, SourcesTable } from '../../db/schema.js';
import { prepared } from '../../db/prepared.js';
import { bigintArray as bigint, intArray as int, textArray as text } from '../../db/pg-arrays.js';

/** SQL of the conversations core: profiles, channels, leads and messages. No rules here. */

const messageByExternalId = prepared((db, p: { integrationId: number; externalId: string }) =>
  db.selectFrom('messages').selectAll().where('integration_id', '=', p.integrationId).where('external_id', '=', p.externalId),
);

export async function findMessageByExternalId(db: Executor, integrationId: number, externalId: string): Promise<MessageRow | undefined> {
  return (await messageByExternalId(db, { integrationId, externalId }))[0];
}

/** The profile of a sender (social id) on an integration. */
function profileBySocialId(db: Executor, integrationId: number, socialId: string) {
  return db.selectFrom('profiles').selectAll().where('integration_id', '=', integrationId).where('social_id', '=', socialId);
}

export async function findProfileBySocialId(db: Executor, integrationId: number, socialId: string): Promise<ProfileRow | undefined> {
  return profileBySocialId(db, integrationId, socialId).executeTakeFirst();
}

const profileForUpdate = prepared((db, p: { integrationId: number; socialId: string }, dialect) => {
  const query = db.selectFrom('profiles').selectAll().where('integration_id', '=', p.integrationId).where('social_id', '=', p.socialId);
  return dialect === 'postgres' ? query.forUpdate() : query;
});

/**
 * The profile of a sender on an integration. On PostgreSQL the row is locked for the rest of the
 * transaction, so concurrent messages of one customer pick or create its lead one at a time.
 */
export async function findProfileForUpdate(db: Executor, integrationId: number, socialId: string): Promise<ProfileRow | undefined> {
  return (await profileForUpdate(db, { integrationId, socialId }))[0];
}

const profileForUpdateWithDuplicate = prepared((db, p: { integrationId: number; socialId: string; externalId: string }) =>
  db
    .selectFrom('profiles')
    .leftJoin('messages as duplicate', (join) =>
      join.on('duplicate.integration_id', '=', p.integrationId).on('duplicate.external_id', '=', p.externalId),
    )
    .selectAll('profiles')
    .select(['duplicate.id as duplicate_id', 'duplicate.lead_id as duplicate_lead_id'])
    .where('profiles.integration_id', '=', p.integrationId)
    .where('profiles.social_id', '=', p.socialId)
    .forUpdate('profiles'),
);

/**
 * PostgreSQL, one round trip: {@link findProfileForUpdate} (the sender's profile, locked) and
 * whether a message with `externalId` is stored already (a provider's redelivery). Without a
 * profile the duplicate is not looked up here (the caller asks {@link findMessageByExternalId}).
 * The look-up sees the statement's snapshot, taken before any wait for the lock: a redelivery
 * committed during that wait is caught by messages_external_uq, and the ingest runs again.
 */
export async function findProfileForUpdateAndDuplicate(
  db: Executor,
  integrationId: number,
  socialId: string,
  externalId: string,
): Promise<{ profile: ProfileRow; duplicate: { id: number; lead_id: number } | undefined } | undefined> {
  const [row] = await profileForUpdateWithDuplicate(db, { integrationId, socialId, externalId });
  if (!row) return undefined;
  const { duplicate_id, duplicate_lead_id, ...profile } = row;
  const duplicate = duplicate_id === null ? undefined : { id: duplicate_id, lead_id: duplicate_lead_id as number };
  return { profile, duplicate };
}

const sourceByExternalId = prepared((db, p: { integrationId: number; type: string; externalId: string }) =>
  db
    .selectFrom('sources')
    .selectAll()
    .where('integration_id', '=', p.integrationId)
    .where('type', '=', p.type)
    .where('external_id', '=', p.externalId),
);

export async function findSource(db: Executor, integrationId: number, type: string, externalId: string): Promise<SourceRow | undefined> {
  return (await sourceByExternalId(db, { integrationId, type, externalId }))[0];
}

const latestLeadOf = prepared((db, p: { customerId: number; integrationId: number }) =>
  db
    .selectFrom('leads')
    .selectAll()
    .where('customer_id', '=', p.customerId)
    .where('integration_id', '=', p.integrationId)
    .orderBy('id', 'desc')
    .limit(1),
);

/** The customer's most recent lead on an integration. */
export async function latestLead(db: Executor, customerId: number, integrationId: number): Promise<LeadRow | undefined> {
  return (await latestLeadOf(db, { customerId, integrationId }))[0];
}

const MESSAGE_COLUMNS = [
  'account_id',
  'lead_id',
  'source_id',
  'integration_id',
  'external_id',
  'incoming',
  'text',
  'url',
  'attachments',
  'reply_to',
  'preview',
  'profile_id',
  'user_id',
  'custom_id',
  'unread',
  'created_at',
] as const satisfies readonly (keyof NewMessage)[];

/** A message's stored values without its id and delivery state (set by the database or later). */
export type MessageValues = Required<Omit<NewMessage, 'id' | 'delivery_status' | 'delivery_error'>>;

const insertMessageRow = prepared((db, p: MessageValues) =>
  db
    .insertInto('messages')
    .values(Object.fromEntries(MESSAGE_COLUMNS.map((column) => [column, p[column]])) as NewMessage)
    .returningAll(),
);

/** Stores one message (every column given; a delivery status comes later) and answers its row. */
export async function insertMessage(db: Executor, values: MessageValues): Promise<MessageRow> {
  const [row] = await insertMessageRow(db, values);
  if (!row) throw new Error('insert into messages returned no row');
  return row;
}

const MESSAGE_FED_COLUMNS = [
  'unread_count',
  'last_message_id',
  'last_message_at',
  'last_message_incoming',
  'awaiting_since',
  'response_time',
  'responded_at',
  'updated_at',
] as const satisfies readonly (keyof LeadRow)[];

const updateMessageFedRow = prepared((db, p: Pick<LeadRow, (typeof MESSAGE_FED_COLUMNS)[number]> & { leadId: number }) =>
  db
    .updateTable('leads')
    .set(Object.fromEntries(MESSAGE_FED_COLUMNS.map((column) => [column, p[column]])))
    .where('id', '=', p.leadId)
    .returning('id'),
);

/**
 * Moves a lead's message-fed fields (after a message in or out) and answers the lead with them.
 * `lead` is the row as this transaction read it: the answer is that row with the new fields
 * (`returning *` made SQLite's update twice as slow as `returning id`).
 */
export async function updateMessageFed(
  db: Executor,
  lead: LeadRow,
  fields: Pick<LeadRow, (typeof MESSAGE_FED_COLUMNS)[number]>,
): Promise<LeadRow> {
  const [row] = await updateMessageFedRow(db, { ...fields, leadId: lead.id });
  if (!row) throw new Error(`lead ${lead.id} vanished during its update`);
  return { ...lead, ...fields };
}

const insertMessageFeedingLeadRow = prepared(
  (
    db,
    p: MessageValues &
      Pick<LeadRow, Exclude<(typeof MESSAGE_FED_COLUMNS)[number], 'last_message_id'>> & {
        leadId: number;
        keptLastMessageId: number | null;
      },
  ) =>
    db
      .with('m', (w) =>
        w
          .insertInto('messages')
          .values(Object.fromEntries(MESSAGE_COLUMNS.map((column) => [column, p[column]])) as NewMessage)
          .returningAll(),
      )
      .with('l', (w) =>
        w
          .updateTable('leads')
          .set(
            Object.fromEntries(
              MESSAGE_FED_COLUMNS.map((column) => [
                column,
                column === 'last_message_id' ? sql<number>`coalesce(${p.keptLastMessageId}::bigint, (select id from m))` : p[column],
              ]),
            ),
          )
          .where('id', '=', p.leadId)
          .returning('id'),
      )
      .selectFrom('m')
      .selectAll('m')
      .select(sql<number | null>`(select id from l)`.as('lead_updated')),
);

/**
 * PostgreSQL, one round trip for {@link insertMessage} then {@link updateMessageFed}: the message
 * and the lead's message-fed fields, where `fields(messageId)` gives those fields for the new
 * message's id (as afterIncoming/afterOutgoing do). Answers both rows as the two calls would.
 */
export async function insertMessageFeedingLead(
  db: Executor,
  values: MessageValues,
  lead: LeadRow,
  fields: (messageId: number) => Pick<LeadRow, (typeof MESSAGE_FED_COLUMNS)[number]>,
): Promise<{ message: MessageRow; lead: LeadRow }> {
  // The fields do not depend on the id except through last_message_id, which is either the new
  // message (the database fills it in) or the lead's earlier last message (kept).
  const probe = fields(-1);
  const keptLastMessageId = probe.last_message_id === -1 ? null : probe.last_message_id;
  const [row] = await insertMessageFeedingLeadRow(db, { ...values, ...probe, leadId: lead.id, keptLastMessageId });
  if (!row) throw new Error('insert into messages returned no row');
  const { lead_updated, ...message } = row;
  if (lead_updated === null) throw new Error(`lead ${lead.id} vanished during its update`);
  return { message, lead: { ...lead, ...fields(message.id) } };
}

export async function insertInboxLead(
  db: Executor,
  values: { accountId: number; integrationId: number; customerId: number; at: number; now: number },
): Promise<LeadRow> {
  return db
    .insertInto('leads')
    .values({
      account_id: values.accountId,
      integration_id: values.integrationId,
      customer_id: values.customerId,
      user_id: null,
      status_id: null,
      status_type: 'inbox',
      last_message_at: values.at,
      created_at: values.now,
      updated_at: values.now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function findProfile(db: Executor, id: number | null): Promise<ProfileRow | undefined> {
  if (id === null) return undefined;
  return db.selectFrom('profiles').selectAll().where('id', '=', id).executeTakeFirst();
}

/** A provider reported a message changed (edited): its text and attachments are replaced. */
export async function updateMessageContent(db: Executor, id: number, content: { text: string; attachments: string }): Promise<void> {
  await db.updateTable('messages').set({ text: content.text, attachments: content.attachments }).where('id', '=', id).execute();
}

export async function insertProfile(db: Executor, values: Insertable<ProfilesTable>): Promise<ProfileRow> {
  return db.insertInto('profiles').values(values).returningAll().executeTakeFirstOrThrow();
}

/** The profile's name, login, avatar or URL as the provider last reported them. */
export async function updateProfileRow(
  db: Executor,
  id: number,
  patch: Partial<Pick<ProfileRow, 'login' | 'name' | 'avatar' | 'profile_url'>>,
): Promise<ProfileRow> {
  return db.updateTable('profiles').set(patch).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

export async function insertSource(db: Executor, values: Insertable<SourcesTable>): Promise<SourceRow> {
  return db.insertInto('sources').values(values).returningAll().executeTakeFirstOrThrow();
}

/** A channel's reply deadline (the caller moves it forward only). */
export async function setSourceExpiry(db: Executor, id: number, expiresAt: number): Promise<SourceRow> {
  return db.updateTable('sources').set({ expires_at: expiresAt }).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

/*
 * PostgreSQL batch ingest (ingest-batch.ts): a batch of messages in a fixed number of statements,
 * whatever its size. Each takes arrays, one element per row, so its text is fixed.
 */

/**
 * PostgreSQL: the next id from `table`'s sequence, the sequence looked up once per statement (an
 * InitPlan). `pg_get_serial_sequence` in each row searched the catalog at every row: ~6 µs a call
 * against ~1, and a batch's statements take an id for most of the rows they write.
 */
const nextId = (table: 'messages' | 'customers' | 'profiles' | 'leads' | 'sources' | 'events') =>
  sql.raw(`nextval((select pg_get_serial_sequence('${table}', 'id')::regclass))`);

/** What a message's ingest reads of its conversation, in {@link lockConversations}. */
export interface ConversationState {
  /** The message stored before under its provider id (a redelivery). */
  duplicate: { id: number; lead_id: number } | undefined;
  source: SourceRow | undefined;
  /** The customer's latest lead on the integration (none for a sender without a customer). */
  lead: LeadRow | undefined;
  /** Ids from the tables' sequences for the rows the message may create (unused ids are skipped). */
  ids: { message: number; customer: number | null; profile: number | null; lead: number | null; source: number | null };
}

/**
 * One round trip at the start of an ingest batch, for the first message of each of its senders
 * (`integrationIds[i]`, sender `socialIds[i]`, provider id `externalIds[i]`, channel
 * `channelTypes[i]` / `channelIds[i]`; one entry per sender): locks the senders' profiles for the
 * rest of the transaction, in (integration, social id) order, so batches running side by side
 * lock in one order and cannot deadlock on each other; then, in a statement of its own whose
 * snapshot holds what the senders' earlier messages committed, reads each message's profile (none
 * for a sender seen first), redelivery check, channel and latest lead, with ids for the message
 * and for the customer, profile, lead and channel it would create (migrations 0072 and 0078,
 * `parley_ingest_conversations`). Every look-up is a lateral subquery per sender, so the plans are
 * index look-ups whatever the statistics they were made with (docs/operations.md: a plan made
 * while the tables were empty stays in use while autovacuum is off; a join would then read the
 * whole table).
 */
export async function lockConversations(
  db: Executor,
  keys: { integrationIds: number[]; socialIds: string[]; externalIds: string[]; channelTypes: string[]; channelIds: string[] },
): Promise<{ profile: ProfileRow | undefined; state: ConversationState }[]> {
  const query = sql<{
    ord: number;
    profile: ProfileRow | null;
    duplicate_id: number | null;
    duplicate_lead_id: number | null;
    source: SourceRow | null;
    lead: LeadRow | null;
    message_id: number;
    customer_id: number | null;
    profile_id: number | null;
    lead_id: number | null;
    source_id: number | null;
  }>`select * from parley_ingest_conversations(${bigint(keys.integrationIds)}, ${text(keys.socialIds)}, ${text(keys.externalIds)},
      ${text(keys.channelTypes)}, ${text(keys.channelIds)})`.compile(db);
  const rows = await executeNamed(db, query);
  if (rows.length !== keys.integrationIds.length) throw new Error('ingest conversations: one row per message expected');
  const id = (value: number | string | null) => (value === null ? null : Number(value));
  return rows.map((row) => ({
    profile: row.profile ?? undefined,
    state: {
      duplicate: row.duplicate_id === null ? undefined : { id: row.duplicate_id, lead_id: row.duplicate_lead_id as number },
      source: row.source ?? undefined,
      lead: row.lead ?? undefined,
      ids: {
        message: Number(row.message_id),
        customer: id(row.customer_id),
        profile: id(row.profile_id),
        lead: id(row.lead_id),
        source: id(row.source_id),
      },
    },
  }));
}

/** What {@link lockLeadsForOutgoing} answers. */
export interface OutgoingLocks {
  /** The leads locked (those of the ids that exist). */
  leads: LeadRow[];
  /** Ids taken from the messages' sequence, one per message to store (unused ids are skipped). */
  messageIds: number[];
  /** The integration and provider id of every message a delivery report is held for (delivery-status.service.ts). */
  held: [number, string][];
}

/**
 * PostgreSQL, one round trip before employees' messages are stored (`outgoingBatchIn`): locks the
 * leads for the rest of the transaction, in id order (sends to one lead are stored one after
 * another), takes `count` message ids, and finds the delivery reports held for the messages'
 * provider ids (`integrationIds[i]`, `externalIds[i]`). Index look-ups only.
 */
export async function lockLeadsForOutgoing(
  db: Executor,
  keys: { leadIds: number[]; integrationIds: number[]; externalIds: string[]; count: number },
): Promise<OutgoingLocks> {
  const query = sql<{ leads: LeadRow[] | null; message_ids: (number | string)[]; held: [number, string][] | null }>`
    with locked as (select to_jsonb(l) as lead from leads l where l.id = any(${bigint(keys.leadIds)}) order by l.id for update of l)
    select (select jsonb_agg(lead) from locked) as leads,
      array(select ${nextId('messages')} from generate_series(1, ${keys.count}::int)) as message_ids,
      (select jsonb_agg(jsonb_build_array(k.integration_id, k.external_id))
        from unnest(${bigint(keys.integrationIds)}, ${text(keys.externalIds)}) as k(integration_id, external_id)
        where exists(select 1 from held_delivery_statuses h where h.integration_id = k.integration_id and h.external_id = k.external_id)
      ) as held`.compile(db);
  const [row] = await executeNamed(db, query);
  return { leads: row?.leads ?? [], messageIds: (row?.message_ids ?? []).map(Number), held: row?.held ?? [] };
}

/** The rows of a batch of incoming messages (ids given), for {@link storeIncomingBatch}. */
export interface IncomingBatch {
  customers: CustomerRow[];
  profiles: ProfileRow[];
  sources: SourceRow[];
  /** New leads, with their message-fed fields already after their first message. */
  leads: LeadRow[];
  messages: MessageRow[];
  /** Existing leads' new message-fed fields (one message per lead). */
  leadUpdates: Pick<LeadRow, 'id' | (typeof MESSAGE_FED_COLUMNS)[number]>[];
  /** Channels' reply deadlines moved forward (one message per channel). */
  deadlines: { id: number; expires_at: number }[];
  /** Events in the order they are recorded, each with its stored payload text. */
  events: { accountId: number; type: string; leadId: number | null; payload: string }[];
}

/**
 * Stores a batch of incoming messages in one statement: the customers, profiles, channels and leads
 * they create, the messages, the existing leads' message-fed fields and the reply deadlines they
 * move, and their events (ids taken here, in order). A batch of sends (`outgoingBatchIn`) is stored
 * through it too: outgoing messages, their leads' fields and their events, nothing created. Answers each event's id and its account's
 * active webhooks, as events/outbox.ts reads them with a single event's insert. `release`: SQL that
 * lets go of the transaction's lock (db/database.ts `releaseLockSql`), evaluated by this statement.
 */
export async function storeIncomingBatch(
  db: Executor,
  batch: IncomingBatch,
  now: number,
  release?: string,
): Promise<{ eventIds: number[]; hooks: { id: number; events: string | null; api_version: string }[][] }> {
  const { customers: c, profiles: p, sources: so, leads: nl, messages: m, leadUpdates: l, deadlines: dl, events: ev } = batch;
  // Only the parts with rows are written: a part without any still opened its table and every
  // index of it and ran its statement triggers, ~1 ms of a batch whatever its size
  // (docs/performance.md). A few shapes, each named once per connection.
  const parts: RawBuilder<unknown>[] = [];
  // Phones as typed only when a new customer has one (WhatsApp senders): one statement shape more.
  const typed = c.some((x) => x.phone_as_typed != null);
  if (c.length)
    parts.push(sql`c as (
      insert into customers (id, account_id, name, login, avatar, email, phone, ${sql.raw(typed ? 'phone_as_typed, ' : '')}address, created_at, updated_at)
      select * from unnest(${bigint(c.map((x) => x.id))}, ${bigint(c.map((x) => x.account_id))}, ${text(c.map((x) => x.name))},
        ${text(c.map((x) => x.login))}, ${text(c.map((x) => x.avatar))}, ${text(c.map((x) => x.email))}, ${text(c.map((x) => x.phone))},
        ${typed ? sql`${text(c.map((x) => x.phone_as_typed))}, ` : sql``}${text(c.map((x) => x.address))}, ${bigint(c.map((x) => x.created_at))}, ${bigint(c.map((x) => x.updated_at))})
      returning id
    )`);
  if (p.length)
    parts.push(sql`p as (
      insert into profiles (id, account_id, customer_id, integration_id, type, social_id, login, name, avatar, profile_url, created_at)
      select * from unnest(${bigint(p.map((x) => x.id))}, ${bigint(p.map((x) => x.account_id))}, ${bigint(p.map((x) => x.customer_id))},
        ${bigint(p.map((x) => x.integration_id))}, ${text(p.map((x) => x.type))}, ${text(p.map((x) => x.social_id))},
        ${text(p.map((x) => x.login))}, ${text(p.map((x) => x.name))}, ${text(p.map((x) => x.avatar))},
        ${text(p.map((x) => x.profile_url))}, ${bigint(p.map((x) => x.created_at))})
      returning id
    )`);
  if (so.length)
    parts.push(sql`so as (
      insert into sources (id, account_id, integration_id, customer_id, external_id, type, name, sender, token, expires_at, created_at)
      select * from unnest(${bigint(so.map((x) => x.id))}, ${bigint(so.map((x) => x.account_id))}, ${bigint(so.map((x) => x.integration_id))},
        ${bigint(so.map((x) => x.customer_id))}, ${text(so.map((x) => x.external_id))}, ${text(so.map((x) => x.type))},
        ${text(so.map((x) => x.name))}, ${text(so.map((x) => x.sender))}, ${text(so.map((x) => x.token))},
        ${bigint(so.map((x) => x.expires_at))}, ${bigint(so.map((x) => x.created_at))})
      returning id
    )`);
  if (nl.length)
    parts.push(sql`nl as (
      insert into leads (id, account_id, integration_id, customer_id, user_id, status_id, status_type, unread_count, last_message_id,
        last_message_at, last_message_incoming, awaiting_since, response_time, created_at, updated_at)
      select * from unnest(${bigint(nl.map((x) => x.id))}, ${bigint(nl.map((x) => x.account_id))}, ${bigint(nl.map((x) => x.integration_id))},
        ${bigint(nl.map((x) => x.customer_id))}, ${bigint(nl.map((x) => x.user_id))}, ${bigint(nl.map((x) => x.status_id))},
        ${text(nl.map((x) => x.status_type))}, ${int(nl.map((x) => x.unread_count))}, ${bigint(nl.map((x) => x.last_message_id))},
        ${bigint(nl.map((x) => x.last_message_at))}, ${int(nl.map((x) => x.last_message_incoming))}, ${bigint(nl.map((x) => x.awaiting_since))},
        ${bigint(nl.map((x) => x.response_time))}, ${bigint(nl.map((x) => x.created_at))}, ${bigint(nl.map((x) => x.updated_at))})
      returning id
    )`);
  parts.push(sql`m as (
      insert into messages (id, account_id, lead_id, source_id, integration_id, external_id, incoming, text, url, attachments,
        reply_to, preview, profile_id, user_id, custom_id, unread, created_at)
      select * from unnest(${bigint(m.map((x) => x.id))}, ${bigint(m.map((x) => x.account_id))}, ${bigint(m.map((x) => x.lead_id))},
        ${bigint(m.map((x) => x.source_id))}, ${bigint(m.map((x) => x.integration_id))}, ${text(m.map((x) => x.external_id))},
        ${int(m.map((x) => x.incoming))}, ${text(m.map((x) => x.text))}, ${text(m.map((x) => x.url))},
        ${text(m.map((x) => x.attachments))}, ${text(m.map((x) => x.reply_to))}, ${text(m.map((x) => x.preview))},
        ${bigint(m.map((x) => x.profile_id))}, ${bigint(m.map((x) => x.user_id))}, ${text(m.map((x) => x.custom_id))},
        ${int(m.map((x) => x.unread))}, ${bigint(m.map((x) => x.created_at))})
      returning id
    )`);
  if (l.length)
    parts.push(sql`l as (
      update leads set unread_count = v.unread_count, last_message_id = v.last_message_id, last_message_at = v.last_message_at,
        last_message_incoming = v.last_message_incoming, awaiting_since = v.awaiting_since, response_time = v.response_time,
        responded_at = v.responded_at, updated_at = v.updated_at
      from unnest(${bigint(l.map((x) => x.id))}, ${int(l.map((x) => x.unread_count))}, ${bigint(l.map((x) => x.last_message_id))},
          ${bigint(l.map((x) => x.last_message_at))}, ${int(l.map((x) => x.last_message_incoming))},
          ${bigint(l.map((x) => x.awaiting_since))}, ${bigint(l.map((x) => x.response_time))}, ${bigint(l.map((x) => x.responded_at))},
          ${bigint(l.map((x) => x.updated_at))})
        as v(id, unread_count, last_message_id, last_message_at, last_message_incoming, awaiting_since, response_time, responded_at, updated_at)
      where leads.id = v.id
      returning leads.id
    )`);
  if (dl.length)
    parts.push(sql`dl as (
      update sources set expires_at = v.expires_at
      from unnest(${bigint(dl.map((x) => x.id))}, ${bigint(dl.map((x) => x.expires_at))}) as v(id, expires_at)
      where sources.id = v.id and (sources.expires_at is null or sources.expires_at < v.expires_at)
      returning sources.id
    )`);
  parts.push(sql`ev as (
      select ${nextId('events')} as id, v.*
      from unnest(${bigint(ev.map((x) => x.accountId))}, ${text(ev.map((x) => x.type))}, ${bigint(ev.map((x) => x.leadId))},
        ${text(ev.map((x) => x.payload))}) with ordinality as v(account_id, type, lead_id, payload, ord)
    ), e as (
      insert into events (id, account_id, type, lead_id, payload, created_at)
      select id, account_id, type, lead_id, payload, ${now}::bigint from ev
      returning id
    )`);
  // The transaction's lock let go (db/database.ts `releaseLockSql`): an uncorrelated subquery,
  // evaluated once, with the first row (every batch has events).
  const released = release ? sql.raw(`, (select ${release}) as released`) : sql``;
  const written = (cte: string, rows: unknown[]) => (rows.length ? sql.raw(`(select count(*) from ${cte})::int`) : sql.raw('0'));
  const query = sql<{
    id: number;
    ord: number;
    messages: number;
    leads: number;
    webhook_id: number | null;
    events: string | null;
    api_version: string | null;
  }>`
    with ${sql.join(parts, sql`, `)}
    select ev.id, ev.ord::int as ord, ${written('m', m)} as messages, ${written('l', l)} + ${written('nl', nl)} as leads,
      w.id as webhook_id, w.events, w.api_version${released}
    from ev left join webhooks w on w.account_id = ev.account_id and w.status = 1
    order by ev.ord`.compile(db);
  // Named, and run in ingest's keyed transaction (db/database.ts `keyedTransaction`): one plan kept
  // per connection, which looks leads and sources up by key however small they were when it was
  // made (test/hot-path-plans.test.ts). Planned at every run, it cost more than it ran.
  const rows = await executeNamed(db, query);
  if (ev.length && (!rows[0] || rows[0].messages !== m.length || rows[0].leads !== l.length + nl.length)) {
    throw new Error('a batch of messages was not stored whole (a lead vanished during its update?)');
  }
  const eventIds = new Array<number>(ev.length);
  const hooks = ev.map(() => [] as { id: number; events: string | null; api_version: string }[]);
  for (const row of rows) {
    eventIds[row.ord - 1] = Number(row.id);
    if (row.webhook_id !== null)
      hooks[row.ord - 1].push({ id: row.webhook_id, events: row.events, api_version: row.api_version as string });
  }
  return { eventIds, hooks };
}

/** A batch of sends' messages for {@link storeSends}, one element per message in every array. */
export interface SendsRows {
  messages: Pick<
    MessageRow,
    | 'lead_id'
    | 'account_id'
    | 'source_id'
    | 'integration_id'
    | 'external_id'
    | 'text'
    | 'url'
    | 'attachments'
    | 'user_id'
    | 'custom_id'
    | 'created_at'
  >[];
  /** Each message's `message.outgoing` payload text around its id: `head + id + tail`. */
  payloads: { head: string; tail: string }[];
  /** The send keys released with the messages. */
  keys: { leadId: number; customId: string }[];
  /** API versions whose webhooks do not receive `message.outgoing` (events/event-versions.ts). */
  noOutgoing: string[];
}

/**
 * PostgreSQL: a batch of sends stored by one statement outside any transaction (migration
 * 0076-send-batch: the leads locked in id order, the messages, the leads' fields, the events,
 * their deliveries, the keys released). Answers each message's id, its event's id and how many
 * deliveries the event got, in order; or nothing, having written nothing, when a delivery report
 * is held for one of the messages. Fails, having written nothing, when a lead does not exist.
 */
export async function storeSends(
  db: Executor,
  rows: SendsRows,
  now: number,
): Promise<{ messageId: number; eventId: number; deliveries: number }[]> {
  const { messages: m, payloads: e, keys: k } = rows;
  const query = sql<{ message_id: number; event_id: number; deliveries: number }>`
    select * from parley_store_sends(${now}::bigint, ${text(rows.noOutgoing)},
      ${bigint(m.map((x) => x.lead_id))}, ${bigint(m.map((x) => x.account_id))}, ${bigint(m.map((x) => x.source_id))},
      ${bigint(m.map((x) => x.integration_id))}, ${text(m.map((x) => x.external_id))}, ${text(m.map((x) => x.text))},
      ${text(m.map((x) => x.url))}, ${text(m.map((x) => x.attachments))}, ${bigint(m.map((x) => x.user_id))},
      ${text(m.map((x) => x.custom_id))}, ${bigint(m.map((x) => x.created_at))},
      ${text(e.map((x) => x.head))}, ${text(e.map((x) => x.tail))},
      ${bigint(k.map((x) => x.leadId))}, ${text(k.map((x) => x.customId))})`.compile(db);
  const answered = await executeNamed(db, query);
  return answered.map((r) => ({ messageId: r.message_id, eventId: r.event_id, deliveries: r.deliveries }));
}
