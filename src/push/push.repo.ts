import { sql } from 'kysely';
import type { Executor } from '../db/database.js';
import { prepared } from '../db/prepared.js';
import type { DeviceRow, LeadRow, UserRow } from '../db/schema.js';

export type PushLead = Pick<LeadRow, 'id' | 'account_id' | 'integration_id' | 'user_id' | 'status_type'> & { customer_name: string };

export async function maxEventId(db: Executor): Promise<number> {
  const row = await db
    .selectFrom('events')
    .select((eb) => eb.fn.max('id').as('id'))
    .executeTakeFirst();
  return row?.id == null ? 0 : Number(row.id);
}

/**
 * The newest event id when no employee has a push device, else undefined: the worker then passes
 * the events over unread (one statement, so the devices are those of the snapshot the id is from).
 */
export async function newestWithoutDevices(db: Executor): Promise<number | undefined> {
  const [row] = await devicesCheck(db, {});
  if (!row || row.devices) return undefined;
  return row.newest == null ? 0 : Number(row.newest);
}

const devicesCheck = prepared((db) =>
  db.selectNoFrom((eb) => [
    eb
      .selectFrom('events')
      .select((e) => e.fn.max('id').as('id'))
      .as('newest'),
    eb.exists(eb.selectFrom('devices').select('id')).as('devices'),
  ]),
);

/**
 * The events after `cursor` in id order, every one of them (the worker's cursor moves over
 * contiguous ids), with the payload of incoming messages only: the others are not pushed, and every
 * process reads every event. Prepared (named on PostgreSQL): every process runs it at every wake.
 */
export const eventsAfter = prepared((db, p: { cursor: number; limit: number }) =>
  db
    .selectFrom('events')
    .select(['id', 'type', 'account_id', 'lead_id'])
    .select(sql<string | null>`case when type = 'message.incoming' then payload end`.as('payload'))
    .where('id', '>', p.cursor)
    .orderBy('id')
    .limit(p.limit),
);

export async function leadForPush(db: Executor, leadId: number): Promise<PushLead | undefined> {
  return db
    .selectFrom('leads')
    .innerJoin('customers', 'customers.id', 'leads.customer_id')
    .select([
      'leads.id',
      'leads.account_id',
      'leads.integration_id',
      'leads.user_id',
      'leads.status_type',
      'customers.name as customer_name',
    ])
    .where('leads.id', '=', leadId)
    .executeTakeFirst();
}

export interface DeviceWithUser {
  device: DeviceRow;
  user: UserRow;
}

/** Every device of the account with its employee (who it is decides what it may be told). */
export async function devicesWithUsers(db: Executor, accountId: number): Promise<DeviceWithUser[]> {
  const devices = await db.selectFrom('devices').selectAll().where('account_id', '=', accountId).orderBy('id').execute();
  if (!devices.length) return [];
  const ids = [...new Set(devices.map((d) => d.user_id))];
  const users = await db.selectFrom('users').selectAll().where('account_id', '=', accountId).where('id', 'in', ids).execute();
  const byId = new Map(users.map((u) => [u.id, u]));
  return devices.flatMap((device) => {
    const user = byId.get(device.user_id);
    return user ? [{ device, user }] : [];
  });
}
