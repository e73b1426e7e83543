import type { Executor } from '../../db/database.js';
import type { DialectName } from '../../db/database.js';
import type { LeadRow, MessageRow, ProfileRow, SourceRow } from '../../db/schema.js';

/** SQL of the conversations core: profiles, channels, leads and messages. No rules here. */

export async function findMessageByExternalId(
  db: Executor,
  integrationId: number,
  externalId: string,
): Promise<MessageRow | undefined> {
  return db
    .selectFrom('messages')
    .selectAll()
    .where('integration_id', '=', integrationId)
    .where('external_id', '=', externalId)
    .executeTakeFirst();
}

/** The profile of a sender (social id) on an integration. */
function profileBySocialId(db: Executor, integrationId: number, socialId: string) {
  return db.selectFrom('profiles').selectAll().where('integration_id', '=', integrationId).where('social_id', '=', socialId);
}

export async function findProfileBySocialId(db: Executor, integrationId: number, socialId: string): Promise<ProfileRow | undefined> {
  return profileBySocialId(db, integrationId, socialId).executeTakeFirst();
}

/**
 * The profile of a sender on an integration. On PostgreSQL the row is locked for the rest of the
 * transaction, so concurrent messages of one customer pick or create its lead one at a time.
 */
export async function findProfileForUpdate(
  db: Executor,
  dialect: DialectName,
  integrationId: number,
  socialId: string,
): Promise<ProfileRow | undefined> {
  const query = profileBySocialId(db, integrationId, socialId);
  return (dialect === 'postgres' ? query.forUpdate() : query).executeTakeFirst();
}

export async function findSource(
  db: Executor,
  integrationId: number,
  type: string,
  externalId: string,
): Promise<SourceRow | undefined> {
  return db
    .selectFrom('sources')
    .selectAll()
    .where('integration_id', '=', integrationId)
    .where('type', '=', type)
    .where('external_id', '=', externalId)
    .executeTakeFirst();
}

/** The customer's most recent lead on an integration. */
export async function latestLead(db: Executor, customerId: number, integrationId: number): Promise<LeadRow | undefined> {
  return db
    .selectFrom('leads')
    .selectAll()
    .where('customer_id', '=', customerId)
    .where('integration_id', '=', integrationId)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
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

export async function findMessage(db: Executor, accountId: number, id: number): Promise<MessageRow | undefined> {
  return db.selectFrom('messages').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
}

export async function findProfile(db: Executor, id: number | null): Promise<ProfileRow | undefined> {
  if (id === null) return undefined;
  return db.selectFrom('profiles').selectAll().where('id', '=', id).executeTakeFirst();
}
