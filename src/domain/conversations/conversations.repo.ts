import { sql, type Insertable } from 'kysely';
import { nameStatement, type Executor } from '../../db/database.js';
import type { LeadRow, MessageRow, NewMessage, ProfileRow, ProfilesTable, SourceRow, SourcesTable } from '../../db/schema.js';
import { prepared } from '../../db/prepared.js';

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

type MessageValues = Required<Omit<NewMessage, 'id' | 'delivery_status' | 'delivery_error'>>;

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
 * PostgreSQL batch ingest (ingest-batch.ts): a batch of known senders' messages in a fixed number
 * of statements, whatever its size. Each takes arrays, one element per message, so its text is
 * fixed and runs as a named statement.
 */

/**
 * Locks the profiles of a batch's senders (`integrationIds[i]`, `socialIds[i]`) for the rest of
 * the transaction, in id order: batches running side by side lock in one order and cannot deadlock
 * on each other. Answers the profiles found (a sender seen first has none).
 */
export async function lockProfiles(db: Executor, integrationIds: number[], socialIds: string[]): Promise<ProfileRow[]> {
  const query = sql<ProfileRow>`select * from profiles
    where (integration_id, social_id) in (select * from unnest(${integrationIds}::bigint[], ${socialIds}::text[]))
    order by id for update`.compile(db);
  nameStatement(query.sql);
  return (await db.executeQuery(query)).rows;
}

/** What a message's ingest reads of its conversation, in {@link conversationStates}. */
export interface ConversationState {
  /** The message stored before under its provider id (a redelivery). */
  duplicate: { id: number; lead_id: number } | undefined;
  source: SourceRow | undefined;
  /** The customer's latest lead on the integration. */
  lead: LeadRow | undefined;
  /** An id for the message, taken from the table's sequence (unused when the message is not stored). */
  messageId: number;
}

/**
 * For each message of a batch (`integrationIds[i]`, sender's `customerIds[i]`, provider id
 * `externalIds[i]`, channel `channelTypes[i]` / `channelIds[i]`): the redelivery check, the
 * channel, the latest lead, and an id for the message. Run after {@link lockProfiles}: the
 * statement's snapshot then holds what the senders' earlier messages committed.
 */
export async function conversationStates(
  db: Executor,
  keys: { integrationIds: number[]; customerIds: number[]; externalIds: string[]; channelTypes: string[]; channelIds: string[] },
): Promise<ConversationState[]> {
  const query = sql<{
    ord: number;
    duplicate_id: number | null;
    duplicate_lead_id: number | null;
    source: SourceRow | null;
    lead: LeadRow | null;
    message_id: number;
  }>`select k.ord::int as ord, d.id as duplicate_id, d.lead_id as duplicate_lead_id, to_jsonb(s) as source,
      to_jsonb(l) as lead, nextval(pg_get_serial_sequence('messages', 'id')) as message_id
    from unnest(${keys.integrationIds}::bigint[], ${keys.customerIds}::bigint[], ${keys.externalIds}::text[],
        ${keys.channelTypes}::text[], ${keys.channelIds}::text[]) with ordinality
      as k(integration_id, customer_id, external_id, channel_type, channel_id, ord)
    left join messages d on d.integration_id = k.integration_id and d.external_id = k.external_id
    left join sources s on s.integration_id = k.integration_id and s.type = k.channel_type and s.external_id = k.channel_id
    left join lateral (select * from leads where leads.customer_id = k.customer_id and leads.integration_id = k.integration_id
      order by leads.id desc limit 1) l on true
    order by k.ord`.compile(db);
  nameStatement(query.sql);
  const rows = (await db.executeQuery(query)).rows;
  if (rows.length !== keys.integrationIds.length) throw new Error('conversation states: one row per message expected');
  return rows.map((row) => ({
    duplicate: row.duplicate_id === null ? undefined : { id: row.duplicate_id, lead_id: row.duplicate_lead_id as number },
    source: row.source ?? undefined,
    lead: row.lead ?? undefined,
    messageId: Number(row.message_id),
  }));
}

/** One message of {@link storeIncomingBatch}: its row (id given), its lead's new fields, its event. */
export interface BatchedIncoming {
  message: MessageRow;
  lead: Pick<LeadRow, 'id' | (typeof MESSAGE_FED_COLUMNS)[number]>;
  /** The channel's reply deadline when the message moves it forward (one message per channel). */
  source: { id: number; expires_at: number } | undefined;
  /** The event's stored payload text (events/outbox.ts `eventPayloadText`). */
  eventPayload: string;
}

/**
 * Stores a batch's incoming messages (ids taken by {@link conversationStates}), moves their leads'
 * message-fed fields (one message per lead) and the reply deadlines they move, and inserts one
 * `message.incoming` event per message, in one statement. Answers each event's id (by lead) and its account's active webhooks, as
 * events/outbox.ts reads them with a single event's insert.
 */
export async function storeIncomingBatch(
  db: Executor,
  batch: BatchedIncoming[],
  now: number,
): Promise<{
  eventIdByLead: Map<number, number>;
  hooksByEvent: Map<number, { id: number; events: string | null; api_version: string }[]>;
}> {
  const m = batch.map((b) => b.message);
  const l = batch.map((b) => b.lead);
  const s = batch.flatMap((b) => (b.source ? [b.source] : []));
  const query = sql<{
    id: number;
    lead_id: number;
    messages: number;
    leads: number;
    webhook_id: number | null;
    events: string | null;
    api_version: string | null;
  }>`
    with m as (
      insert into messages (id, account_id, lead_id, source_id, integration_id, external_id, incoming, text, url, attachments,
        reply_to, preview, profile_id, user_id, custom_id, unread, created_at)
      select * from unnest(${m.map((x) => x.id)}::bigint[], ${m.map((x) => x.account_id)}::bigint[], ${m.map((x) => x.lead_id)}::bigint[],
        ${m.map((x) => x.source_id)}::bigint[], ${m.map((x) => x.integration_id)}::bigint[], ${m.map((x) => x.external_id)}::text[],
        ${m.map((x) => x.incoming)}::int[], ${m.map((x) => x.text)}::text[], ${m.map((x) => x.url)}::text[],
        ${m.map((x) => x.attachments)}::text[], ${m.map((x) => x.reply_to)}::text[], ${m.map((x) => x.preview)}::text[],
        ${m.map((x) => x.profile_id)}::bigint[], ${m.map((x) => x.user_id)}::bigint[], ${m.map((x) => x.custom_id)}::text[],
        ${m.map((x) => x.unread)}::int[], ${m.map((x) => x.created_at)}::bigint[])
      returning id
    ), l as (
      update leads set unread_count = v.unread_count, last_message_id = v.last_message_id, last_message_at = v.last_message_at,
        last_message_incoming = v.last_message_incoming, awaiting_since = v.awaiting_since, response_time = v.response_time,
        updated_at = v.updated_at
      from unnest(${l.map((x) => x.id)}::bigint[], ${l.map((x) => x.unread_count)}::int[], ${l.map((x) => x.last_message_id)}::bigint[],
          ${l.map((x) => x.last_message_at)}::bigint[], ${l.map((x) => x.last_message_incoming)}::int[],
          ${l.map((x) => x.awaiting_since)}::bigint[], ${l.map((x) => x.response_time)}::bigint[], ${l.map((x) => x.updated_at)}::bigint[])
        as v(id, unread_count, last_message_id, last_message_at, last_message_incoming, awaiting_since, response_time, updated_at)
      where leads.id = v.id
      returning leads.id
    ), s as (
      update sources set expires_at = v.expires_at
      from unnest(${s.map((x) => x.id)}::bigint[], ${s.map((x) => x.expires_at)}::bigint[]) as v(id, expires_at)
      where sources.id = v.id and (sources.expires_at is null or sources.expires_at < v.expires_at)
      returning sources.id
    ), e as (
      insert into events (account_id, type, lead_id, payload, created_at)
      select v.account_id, 'message.incoming', v.lead_id, v.payload, ${now}::bigint
      from unnest(${m.map((x) => x.account_id)}::bigint[], ${m.map((x) => x.lead_id)}::bigint[], ${batch.map((b) => b.eventPayload)}::text[])
        as v(account_id, lead_id, payload)
      returning id, account_id, lead_id
    )
    select e.id, e.lead_id, (select count(*) from m)::int as messages, (select count(*) from l)::int as leads,
      w.id as webhook_id, w.events, w.api_version
    from e left join webhooks w on w.account_id = e.account_id and w.status = 1`.compile(db);
  nameStatement(query.sql);
  const rows = (await db.executeQuery(query)).rows;
  if (!rows[0] || rows[0].messages !== batch.length || rows[0].leads !== batch.length) {
    throw new Error('a batch of incoming messages was not stored whole (a lead vanished during its update?)');
  }
  const eventIdByLead = new Map<number, number>();
  const hooksByEvent = new Map<number, { id: number; events: string | null; api_version: string }[]>();
  for (const row of rows) {
    eventIdByLead.set(row.lead_id, row.id);
    const hooks = hooksByEvent.get(row.id) ?? [];
    if (row.webhook_id !== null) hooks.push({ id: row.webhook_id, events: row.events, api_version: row.api_version as string });
    hooksByEvent.set(row.id, hooks);
  }
  return { eventIdByLead, hooksByEvent };
}
