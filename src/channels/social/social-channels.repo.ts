import type { Executor } from '../../db/database.js';
import type { IntegrationRow } from '../../db/schema.js';

/** SQL of the social channels' inbound side: integrations served, polling cursors, handled event ids. */

/** Active integrations of a type (or the one with `id` while it is active). */
export function activeIntegrations(db: Executor, type: string, id?: number): Promise<IntegrationRow[]> {
  let query = db
    .selectFrom('integrations')
    .selectAll()
    .where('type', '=', type)
    .where('status', '=', 'active')
    .where('deleted_at', 'is', null);
  if (id !== undefined) query = query.where('id', '=', id);
  return query.orderBy('id').execute();
}

export async function pollCursor(db: Executor, integrationId: number): Promise<string | undefined> {
  const row = await db.selectFrom('channel_poll_cursors').select('cursor').where('integration_id', '=', integrationId).executeTakeFirst();
  return row?.cursor;
}

export async function savePollCursor(db: Executor, integrationId: number, cursor: string, now: number): Promise<void> {
  await db
    .insertInto('channel_poll_cursors')
    .values({ integration_id: integrationId, cursor, updated_at: now })
    .onConflict((oc) => oc.column('integration_id').doUpdateSet({ cursor, updated_at: now }))
    .execute();
}

export async function profileAvatar(db: Executor, integrationId: number, socialId: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('profiles')
    .select('avatar')
    .where('integration_id', '=', integrationId)
    .where('social_id', '=', socialId)
    .executeTakeFirst();
  return row?.avatar;
}

export async function eventHandled(db: Executor, integrationId: number, eventId: string): Promise<boolean> {
  const row = await db
    .selectFrom('channel_events')
    .select('event_id')
    .where('integration_id', '=', integrationId)
    .where('event_id', '=', eventId)
    .executeTakeFirst();
  return row !== undefined;
}

/** Records a handled event id and forgets those older than `keepSince`. */
export async function recordEventHandled(
  db: Executor,
  integrationId: number,
  eventId: string,
  now: number,
  keepSince: number,
): Promise<void> {
  await db
    .insertInto('channel_events')
    .values({ integration_id: integrationId, event_id: eventId, created_at: now })
    .onConflict((oc) => oc.columns(['integration_id', 'event_id']).doNothing())
    .execute();
  await db.deleteFrom('channel_events').where('created_at', '<', keepSince).execute();
}
