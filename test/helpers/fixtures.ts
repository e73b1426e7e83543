import { expect } from 'vitest';
import { maxEventId } from '../../src/events/outbox-tail.js';
import { hashPassword } from '../../src/domain/auth/passwords.js';
import { insertUser } from '../../src/domain/users/users.repo.js';
import type { IntegrationRow, LeadStatusType } from '../../src/db/schema.js';
import type { Harness, SignedUp } from './harness.js';

/**
 * Rows made directly in the database, for tests whose subject is something else (a role matrix
 * needs a manager; a customer test needs a lead). Flows under test go through the API instead.
 */

let seq = 0;
const next = () => `${++seq}-${Math.random().toString(36).slice(2, 7)}`;

export interface ManagerFixture {
  userId: number;
  login: string;
  access: string;
}

export async function createManager(
  h: Harness,
  owner: Pick<SignedUp, 'accountId'>,
  opts: { sources?: Array<number | null>; allowAllDeals?: boolean; allowedUsers?: number[] } = {},
): Promise<ManagerFixture> {
  const db = h.database.db.kysely;
  const login = `manager${next()}@example.com`;
  const pass = 'manager password';
  const user = await insertUser(db, {
    account_id: owner.accountId,
    login,
    name: 'Manager',
    password_hash: await hashPassword(pass),
    role: 'manager',
    confirmed: 1,
    allow_all_deals: opts.allowAllDeals ? 1 : 0,
    allowed_users: opts.allowedUsers ? JSON.stringify(opts.allowedUsers) : null,
    created_at: h.clock.now(),
  });
  for (const saId of opts.sources ?? []) {
    await db.insertInto('user_sources').values({ account_id: owner.accountId, user_id: user.id, sa_id: saId }).execute();
  }
  const res = await h.request({ method: 'POST', url: '/v1.3/auth/login', payload: { login, pass } });
  if (res.statusCode !== 200) throw new Error(`manager login failed: ${res.body}`);
  return { userId: user.id, login, access: res.json().accessToken.token };
}

export async function createIntegration(h: Harness, accountId: number, type = 'widget', login = 'shop'): Promise<number> {
  const row = await h.database.db.kysely
    .insertInto('integrations')
    .values({ account_id: accountId, type, login, external_id: `ext-${next()}`, created_at: h.clock.now() })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

/** An integration's whole row, for tests that hand it to ingest or the channel code. */
export async function createIntegrationRow(h: Harness, accountId: number, type = 'widget'): Promise<IntegrationRow> {
  const id = await createIntegration(h, accountId, type);
  return h.database.db.kysely.selectFrom('integrations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

/**
 * Moves the automation consumer's cursor to the newest event, so that the next worker poll reads
 * only what a test records after this.
 */
export async function automationFromNewest(h: Harness): Promise<void> {
  const db = h.database.db.kysely;
  const eventId = await maxEventId(db);
  await db
    .insertInto('automation_cursors')
    .values({ name: 'automation', event_id: eventId })
    .onConflict((oc) => oc.column('name').doUpdateSet({ event_id: eventId }))
    .execute();
}

/** An automation rule `owner` made through the API (docs/api/automation.md), named 'rule' unless `payload` names it: its id. */
export async function postRule(h: Harness, owner: SignedUp, payload: Record<string, unknown>): Promise<number> {
  const res = await h.request({
    method: 'POST',
    url: '/v1.3/automation/rules',
    token: owner.access,
    payload: { name: 'rule', ...payload },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().id;
}

export interface LeadFixture {
  leadId: number;
  customerId: number;
  profileId: number;
  sourceId: number;
}

/** A customer with a profile and a message channel on the integration, and one lead. */
export async function createLead(
  h: Harness,
  accountId: number,
  integrationId: number,
  opts: { userId?: number | null; statusId?: number | null; statusType?: LeadStatusType; customerName?: string } = {},
): Promise<LeadFixture> {
  const db = h.database.db.kysely;
  const now = h.clock.now();
  const social = `social-${next()}`;
  const integration = await db.selectFrom('integrations').select('type').where('id', '=', integrationId).executeTakeFirstOrThrow();
  const customer = await db
    .insertInto('customers')
    .values({ account_id: accountId, name: opts.customerName ?? 'Customer', login: social, created_at: now, updated_at: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  const profile = await db
    .insertInto('profiles')
    .values({
      account_id: accountId,
      customer_id: customer.id,
      integration_id: integrationId,
      type: integration.type,
      social_id: social,
      login: social,
      created_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const source = await db
    .insertInto('sources')
    .values({
      account_id: accountId,
      integration_id: integrationId,
      customer_id: customer.id,
      external_id: `chat-${social}`,
      type: 'message',
      sender: social,
      created_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const lead = await db
    .insertInto('leads')
    .values({
      account_id: accountId,
      integration_id: integrationId,
      customer_id: customer.id,
      user_id: opts.userId ?? null,
      status_id: opts.statusId ?? null,
      status_type: opts.statusType ?? (opts.statusId ? 'active' : 'inbox'),
      last_message_at: now,
      created_at: now,
      updated_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { leadId: lead.id, customerId: customer.id, profileId: profile.id, sourceId: source.id };
}
