import { sql, type Insertable } from 'kysely';
import type { Executor } from '../../db/database.js';
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
