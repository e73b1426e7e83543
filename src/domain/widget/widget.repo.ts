import { sql } from 'kysely';
import { KeyedLookups } from '../../db/batch-queue.js';
import { dialectOf, type Executor } from '../../db/database.js';
import { kept } from '../../db/kept.js';
import { prepared } from '../../db/prepared.js';
import { findMessageByExternalId } from '../conversations/conversations.repo.js';
import type { IntegrationRow, MessageRow, SourceRow, WidgetVisitorRow } from '../../db/schema.js';

/** SQL of the site widget: widgets by key, visitors, sessions, a visitor's channel and history. */

export async function findWidgetByKey(db: Executor, key: string): Promise<IntegrationRow | undefined> {
  return db
    .selectFrom('integrations')
    .selectAll()
    .where('type', '=', 'widget')
    .where('external_id', '=', key)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

/** The installation's first live widget (the demo page). */
export async function firstWidget(db: Executor): Promise<IntegrationRow | undefined> {
  return db
    .selectFrom('integrations')
    .selectAll()
    .where('type', '=', 'widget')
    .where('deleted_at', 'is', null)
    .where('status', '=', 'active')
    .where('external_id', 'like', 'wk_%')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
}

const visitorByToken = prepared((db, p: { tokenHash: string }) =>
  db
    .selectFrom('widget_sessions')
    .innerJoin('widget_visitors', 'widget_visitors.id', 'widget_sessions.visitor_id')
    .selectAll('widget_visitors')
    .select('widget_sessions.id as session_id')
    .where('widget_sessions.token_hash', '=', p.tokenHash),
);

export async function findVisitorByToken(
  db: Executor,
  tokenHash: string,
): Promise<(WidgetVisitorRow & { session_id: number }) | undefined> {
  return (await visitorByToken(db, { tokenHash }))[0];
}

const SESSION_VISITOR_COLUMNS = [
  'widget_visitors.id as visitor_id',
  'widget_visitors.account_id as visitor_account_id',
  'widget_visitors.integration_id as visitor_integration_id',
  'widget_visitors.public_id as visitor_public_id',
  'widget_visitors.identifier as visitor_identifier',
  'widget_visitors.name as visitor_name',
  'widget_visitors.email as visitor_email',
  'widget_visitors.phone as visitor_phone',
  'widget_visitors.created_at as visitor_created_at',
  'widget_visitors.last_seen_at as visitor_last_seen_at',
  'widget_sessions.token_hash',
] as const;

/** Sessions joined to their visitors and those visitors' widgets (live, of the visitor's account). */
const sessionVisitors = (db: Executor) =>
  db
    .selectFrom('widget_sessions')
    .innerJoin('widget_visitors', 'widget_visitors.id', 'widget_sessions.visitor_id')
    .innerJoin('integrations', (join) =>
      join
        .onRef('integrations.id', '=', 'widget_visitors.integration_id')
        .onRef('integrations.account_id', '=', 'widget_visitors.account_id'),
    )
    .selectAll('integrations')
    .select(SESSION_VISITOR_COLUMNS)
    .where('integrations.deleted_at', 'is', null);

/**
 * A session's visitor with its widget, in one statement: every visitor request starts with it, each
 * widget message among them (docs/performance.md: a look-up of the
 * integration after the visitor's was a round trip per message).
 */
const sessionVisitor = prepared((db, p: { tokenHash: string }) =>
  sessionVisitors(db).where('widget_sessions.token_hash', '=', p.tokenHash),
);

/** PostgreSQL: the sessions of several tokens' hashes at once (see `lookupsOf`). */
const sessionVisitorsOf = prepared((db, p: { tokenHashes: string[] }) =>
  sessionVisitors(db).where(sql<boolean>`widget_sessions.token_hash = any(${p.tokenHashes}::text[])`),
);

type SessionVisitorRow = Awaited<ReturnType<typeof sessionVisitor>>[number];
export type SessionVisitor = { visitor: WidgetVisitorRow; integration: IntegrationRow };

/**
 * PostgreSQL: the session look-ups of one turn of the event loop in one statement instead of one
 * each (docs/performance.md): under load a process answers many visitors'
 * messages at once, and each statement is a round trip, a socket write and PostgreSQL's work per
 * statement. Each caller is answered what its own look-up would have found.
 */
const lookupsOf = new WeakMap<Executor, KeyedLookups<string, SessionVisitor>>();

/** The visitor of a session token's hash and its widget; undefined for an unknown token or a deleted widget. */
export async function findSessionVisitor(db: Executor, tokenHash: string): Promise<SessionVisitor | undefined> {
  if (dialectOf(db) === 'postgres') {
    const lookups = kept(
      lookupsOf,
      db,
      () =>
        new KeyedLookups(async (tokenHashes: string[]) => {
          const rows = await sessionVisitorsOf(db, { tokenHashes });
          return new Map(rows.map((row) => [row.token_hash, sessionVisitorOf(row)]));
        }),
    );
    return lookups.find(tokenHash);
  }
  const row = (await sessionVisitor(db, { tokenHash }))[0];
  return row && sessionVisitorOf(row);
}

function sessionVisitorOf(row: SessionVisitorRow): SessionVisitor {
  const {
    visitor_id,
    visitor_account_id,
    visitor_integration_id,
    visitor_public_id,
    visitor_identifier,
    visitor_name,
    visitor_email,
    visitor_phone,
    visitor_created_at,
    visitor_last_seen_at,
    token_hash: _hash,
    ...integration
  } = row;
  const visitor: WidgetVisitorRow = {
    id: visitor_id,
    account_id: visitor_account_id,
    integration_id: visitor_integration_id,
    public_id: visitor_public_id,
    identifier: visitor_identifier,
    name: visitor_name,
    email: visitor_email,
    phone: visitor_phone,
    created_at: visitor_created_at,
    last_seen_at: visitor_last_seen_at,
  };
  return { visitor, integration };
}

/** A visitor by its public id: an employee's every send to a widget lead checks its visitor. */
const visitorByPublicId = prepared((db, p: { integrationId: number; publicId: string }) =>
  db.selectFrom('widget_visitors').selectAll().where('integration_id', '=', p.integrationId).where('public_id', '=', p.publicId),
);

export async function findVisitor(db: Executor, integrationId: number, publicId: string): Promise<WidgetVisitorRow | undefined> {
  return (await visitorByPublicId(db, { integrationId, publicId }))[0];
}

export async function insertVisitor(db: Executor, row: Omit<WidgetVisitorRow, 'id'>): Promise<WidgetVisitorRow> {
  return db.insertInto('widget_visitors').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateVisitor(
  db: Executor,
  id: number,
  patch: Partial<Pick<WidgetVisitorRow, 'name' | 'email' | 'phone' | 'last_seen_at'>>,
): Promise<WidgetVisitorRow> {
  return db.updateTable('widget_visitors').set(patch).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

export async function insertSession(db: Executor, visitorId: number, tokenHash: string, now: number): Promise<void> {
  await db
    .insertInto('widget_sessions')
    .values({ visitor_id: visitorId, token_hash: tokenHash, created_at: now, last_used_at: now })
    .execute();
}

export async function touchSession(db: Executor, sessionId: number, now: number): Promise<void> {
  await db.updateTable('widget_sessions').set({ last_used_at: now }).where('id', '=', sessionId).execute();
}

/** The visitor's channel: its `message` source on the widget. */
export async function visitorSource(db: Executor, integrationId: number, publicId: string): Promise<SourceRow | undefined> {
  return db
    .selectFrom('sources')
    .selectAll()
    .where('integration_id', '=', integrationId)
    .where('type', '=', 'message')
    .where('external_id', '=', publicId)
    .executeTakeFirst();
}

/** The customer a visitor became (its `widget` profile), if it has written yet. */
export async function visitorCustomerId(db: Executor, integrationId: number, publicId: string): Promise<number | undefined> {
  const row = await db
    .selectFrom('profiles')
    .select('customer_id')
    .where('integration_id', '=', integrationId)
    .where('social_id', '=', publicId)
    .executeTakeFirst();
  return row?.customer_id;
}

/** Newest first, `limit + 1` rows (the extra one says whether there is more), before `before` (an id). */
export async function historyRows(db: Executor, sourceId: number, before: number | undefined, limit: number): Promise<MessageRow[]> {
  let query = db.selectFrom('messages').selectAll().where('source_id', '=', sourceId);
  if (before !== undefined) query = query.where('id', '<', before);
  return query
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
}

export async function messageByExternalId(db: Executor, integrationId: number, externalId: string): Promise<MessageRow | undefined> {
  return findMessageByExternalId(db, integrationId, externalId);
}

/** Messages by id (the replies a batch of committed events names). */
export async function messagesByIds(db: Executor, ids: number[]): Promise<MessageRow[]> {
  if (!ids.length) return [];
  return db.selectFrom('messages').selectAll().where('id', 'in', ids).execute();
}
