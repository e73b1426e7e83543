import type { Executor } from '../../db/database.js';
import type { LeadRow, MessageRow, NewMessage, ProfileRow, SourceRow } from '../../db/schema.js';
import { prepared } from '../../db/prepared.js';

/** SQL of the conversations core: profiles, channels, leads and messages. No rules here. */

const messageByExternalId = prepared((db, arg) =>
  db.selectFrom('messages').selectAll().where('integration_id', '=', arg(0)).where('external_id', '=', arg(1)),
);

export async function findMessageByExternalId(
  db: Executor,
  integrationId: number,
  externalId: string,
): Promise<MessageRow | undefined> {
  return (await messageByExternalId(db, integrationId, externalId))[0];
}

/** The profile of a sender (social id) on an integration. */
function profileBySocialId(db: Executor, integrationId: number, socialId: string) {
  return db.selectFrom('profiles').selectAll().where('integration_id', '=', integrationId).where('social_id', '=', socialId);
}

export async function findProfileBySocialId(db: Executor, integrationId: number, socialId: string): Promise<ProfileRow | undefined> {
  return profileBySocialId(db, integrationId, socialId).executeTakeFirst();
}

const profileForUpdate = prepared((db, arg, dialect) => {
  const query = db.selectFrom('profiles').selectAll().where('integration_id', '=', arg(0)).where('social_id', '=', arg(1));
  return dialect === 'postgres' ? query.forUpdate() : query;
});

/**
 * The profile of a sender on an integration. On PostgreSQL the row is locked for the rest of the
 * transaction, so concurrent messages of one customer pick or create its lead one at a time.
 */
export async function findProfileForUpdate(db: Executor, integrationId: number, socialId: string): Promise<ProfileRow | undefined> {
  return (await profileForUpdate(db, integrationId, socialId))[0];
}

const sourceByExternalId = prepared((db, arg) =>
  db.selectFrom('sources').selectAll().where('integration_id', '=', arg(0)).where('type', '=', arg(1)).where('external_id', '=', arg(2)),
);

export async function findSource(
  db: Executor,
  integrationId: number,
  type: string,
  externalId: string,
): Promise<SourceRow | undefined> {
  return (await sourceByExternalId(db, integrationId, type, externalId))[0];
}

const latestLeadOf = prepared((db, arg) =>
  db.selectFrom('leads').selectAll().where('customer_id', '=', arg(0)).where('integration_id', '=', arg(1)).orderBy('id', 'desc').limit(1),
);

/** The customer's most recent lead on an integration. */
export async function latestLead(db: Executor, customerId: number, integrationId: number): Promise<LeadRow | undefined> {
  return (await latestLeadOf(db, customerId, integrationId))[0];
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

const insertMessageRow = prepared((db, arg) =>
  db
    .insertInto('messages')
    .values(Object.fromEntries(MESSAGE_COLUMNS.map((column, i) => [column, arg(i)])) as NewMessage)
    .returningAll(),
);

/** Stores one message (every column given; a delivery status comes later) and answers its row. */
export async function insertMessage(db: Executor, values: Required<Omit<NewMessage, 'id' | 'delivery_status' | 'delivery_error'>>): Promise<MessageRow> {
  const [row] = await insertMessageRow(db, ...MESSAGE_COLUMNS.map((column) => values[column]));
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

const updateMessageFedRow = prepared((db, arg) =>
  db
    .updateTable('leads')
    .set(Object.fromEntries(MESSAGE_FED_COLUMNS.map((column, i) => [column, arg(i)])))
    .where('id', '=', arg(MESSAGE_FED_COLUMNS.length))
    .returning('id'),
);

/**
 * Moves a lead's message-fed fields (after a message in or out) and answers the lead with them.
 * `lead` is the row as this transaction read it: the answer is that row with the new fields
 * (`returning *` made SQLite's update twice as slow as `returning id`).
 */
export async function updateMessageFed(db: Executor, lead: LeadRow, fields: Pick<LeadRow, (typeof MESSAGE_FED_COLUMNS)[number]>): Promise<LeadRow> {
  const [row] = await updateMessageFedRow(db, ...MESSAGE_FED_COLUMNS.map((column) => fields[column]), lead.id);
  if (!row) throw new Error(`lead ${lead.id} vanished during its update`);
  return { ...lead, ...fields };
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
