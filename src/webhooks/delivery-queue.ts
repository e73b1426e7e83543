import { sql, type RawBuilder } from 'kysely';
import { executeNamed, type Db, type Executor } from '../db/database.js';
import { groupCommitOf } from '../db/group-commit.js';

/** A delivery claimed by a worker, with what sending it needs (one statement: claim and details). */
export interface ClaimedDelivery {
  id: number;
  webhook_id: number;
  event_id: number;
  message_id: string;
  attempts: number;
  lease_until: number;
  url: string;
  secret: string;
  api_version: string;
  payload: string;
  /** The account's `typeNames` setting (domain/accounts/account-settings.ts). */
  type_names: string | null;
}

export interface ClaimRequest {
  now: number;
  /** The lease of the claimed rows (`lease_until`). */
  leaseUntil: number;
  workerId: string;
  /** At most this many deliveries of one endpoint leased at once, across processes. */
  perEndpoint: number;
  /** At most this many rows for this claim (the worker's free slots). */
  limit: number;
}

/**
 * Claims up to `limit` due deliveries in one `UPDATE ... RETURNING`, leased to `workerId`.
 *
 * Each endpoint below its capacity contributes its own oldest due rows, read through
 * deliveries_pending_idx (webhook_id, next_attempt_at) of pending rows: the cost follows the open
 * endpoints and the rows taken, never the backlog. (Scanning the due rows of every endpoint in one
 * order read past the whole backlog of endpoints at capacity: ~30 ms a claim with 16,000 pending
 * rows, paid again on every claim.) A row waits while an earlier delivery of its webhook and lead
 * is pending (order per lead and endpoint). On PostgreSQL the picked rows are locked
 * `FOR UPDATE SKIP LOCKED`, so concurrent claims of several processes never take one row twice.
 */
export function claimDeliveries(db: Db, r: ClaimRequest): Promise<ClaimedDelivery[]> {
  if (db.dialect === 'postgres') return claimIn(db.kysely, true, r);
  return grouped(db.kysely, (trx) => claimIn(trx, false, r));
}

/**
 * SQLite: `work` in a savepoint of the database's group commit while ingests are queued or
 * committing (db/group-commit.ts `join`), answered once that transaction committed: beside ingest,
 * a round shares their commit instead of paying one of its own. Otherwise (and in a transaction
 * already) at once.
 */
function grouped<T>(executor: Executor, work: (trx: Executor) => Promise<T>): Promise<T> {
  return executor.isTransaction ? work(executor) : groupCommitOf(executor).join(work);
}

async function claimIn(executor: Executor, postgres: boolean, r: ClaimRequest): Promise<ClaimedDelivery[]> {
  if (r.limit <= 0) return [];
  // PostgreSQL: the claim of parley_webhook_round (migration 0145), which keeps one generic plan
  // per connection reading the pending rows through the partial indexes whatever the instant.
  if (postgres) return claimed(await runRound(executor, undefined, undefined, r));
  const rows = await executeNamed(executor, claimStatement(r).compile(executor));
  return claimed(await withEndpoints(executor, rows));
}

/** What a claimed delivery needs of its endpoint (and the endpoint's account). */
interface EndpointDetails {
  id: number;
  url: string;
  secret: string;
  api_version: string;
  type_names: string | null;
}

/**
 * SQLite: the endpoint columns of claimed rows, one lookup for the round's few endpoints rather
 * than four subselects per row in the claim's RETURNING (docs/performance.md). In the claim's
 * transaction; a row whose endpoint vanished meanwhile has nothing to send and is left out.
 */
async function withEndpoints(executor: Executor, rows: SqliteClaimedRow[]): Promise<ClaimedDelivery[]> {
  if (!rows.length) return [];
  const ids = [...new Set(rows.map((row) => row.webhook_id))];
  const endpoints = await executeNamed<EndpointDetails>(
    executor,
    sql<EndpointDetails>`select w.id, w.url, w.secret, w.api_version, a.type_names
      from webhooks w join accounts a on a.id = w.account_id where w.id in ${idList(ids)}`.compile(executor),
  );
  const byId = new Map(endpoints.map((e) => [Number(e.id), e]));
  const out: ClaimedDelivery[] = [];
  for (const row of rows) {
    const e = byId.get(Number(row.webhook_id));
    if (!e) continue;
    // A literal of fixed shape: spreading the driver's row objects cost ~7 us a row.
    out.push({
      id: row.id,
      webhook_id: row.webhook_id,
      event_id: row.event_id,
      message_id: row.message_id,
      attempts: row.attempts,
      lease_until: row.lease_until,
      url: e.url,
      secret: e.secret,
      api_version: e.api_version,
      type_names: e.type_names,
      payload: row.payload,
    });
  }
  return out;
}

/** A row whose webhook or event vanished meanwhile has nothing to send (cascades delete it too). */
function claimed(rows: ClaimedDelivery[]): ClaimedDelivery[] {
  return rows.filter((row) => row.url !== null && row.payload !== null).sort((a, b) => a.id - b.id);
}

/**
 * PostgreSQL: one call of parley_webhook_round (migration 0145), a named statement: the record of
 * `outcomes` (when given), then the claim of `claim.limit` deliveries (when given), one round trip
 * and one transaction. (The record, then the claim in a keyed transaction of its own, took four
 * round trips; docs/performance.md.)
 */
async function runRound(
  executor: Executor,
  outcomes: DeliveryOutcome[] | undefined,
  policy: RecordPolicy | undefined,
  claim: ClaimRequest | undefined,
): Promise<ClaimedDelivery[]> {
  if (policy && claim && policy.workerId !== claim.workerId) throw new Error('a round records and claims for one worker');
  const now = policy?.now ?? claim?.now ?? 0;
  const query = sql<ClaimedDelivery>`select * from parley_webhook_round(
    cast(${outcomes ? outcomeJson(outcomes) : null} as jsonb), cast(${now} as bigint), cast(${policy?.workerId ?? claim?.workerId ?? ''} as text),
    cast(${policy?.disableIfFailingSince ?? 0} as bigint), cast(${claim?.now ?? now} as bigint), cast(${claim?.leaseUntil ?? 0} as bigint),
    cast(${claim?.perEndpoint ?? 0} as integer), cast(${claim?.limit ?? 0} as integer))`;
  return executeNamed(executor, query.compile(executor));
}

/** A row of the SQLite claim: the delivery and its event's payload (the endpoint's columns come after). */
type SqliteClaimedRow = Omit<ClaimedDelivery, 'url' | 'secret' | 'api_version' | 'type_names'>;

/** SQLite: the claim statement (exported for the query-plan test); PostgreSQL's is parley_webhook_round's. */
export function claimStatement(r: ClaimRequest): RawBuilder<SqliteClaimedRow> {
  const perEndpoint = Math.min(r.perEndpoint, r.limit);
  // SQLite ran the selection twice as slowly with its row limits bound as parameters (329 against
  // 164 us for a claim of 50 behind 80 leases, docs/performance.md): the endpoint's limit is written
  // into the text (at most `perEndpoint` texts), and the claim's own limit, which changes at almost
  // every claim, is a row number compared with a parameter, not a LIMIT.
  const claimable = (t: 'x' | 'd') =>
    sql`${sql.raw(t)}.status = 'pending' and (${sql.raw(t)}.lease_until is null or ${sql.raw(t)}.lease_until < ${r.now})`;
  // Endpoints first, then each one's oldest due rows: SQLite has no LATERAL, but CROSS JOIN fixes
  // the loop order and `id in (<correlated subquery>)` is then looked up per endpoint.
  return sql<SqliteClaimedRow>`
    with busy as (
      select webhook_id, count(*) as n from deliveries
      where status = 'pending' and lease_until is not null and lease_until >= ${r.now}
      group by webhook_id
    ),
    endpoints as (
      select w.id, coalesce(b.n, 0) as n from webhooks w left join busy b on b.webhook_id = w.id
      where w.status = 1 and coalesce(b.n, 0) < ${r.perEndpoint}
    ),
    candidates as (
      select c.id, c.webhook_id, c.next_attempt_at, ep.n from endpoints ep cross join deliveries c on c.id in (
        select x.id from deliveries x
        where x.webhook_id = ep.id and ${claimable('x')} and x.next_attempt_at <= ${r.now}
          and (x.lead_id is null or not exists (
            select 1 from deliveries e
            where e.webhook_id = x.webhook_id and e.lead_id = x.lead_id and e.status = 'pending' and e.id < x.id))
        order by x.next_attempt_at, x.id
        limit ${sql.lit(perEndpoint)})
    ),
    ready as (
      select c.id, c.next_attempt_at,
        c.n + row_number() over (partition by c.webhook_id order by c.next_attempt_at, c.id) as slot
      from candidates c
    ),
    picked as (
      select id from (
        select id, row_number() over (order by next_attempt_at, id) as k from ready where slot <= ${r.perEndpoint}
      ) where k <= ${r.limit}
    )
    update deliveries set lease_until = ${r.leaseUntil}, leased_by = ${r.workerId}
    where id in (select id from picked)
    returning id, webhook_id, event_id, message_id, attempts, lease_until,
      (select ev.payload from events ev where ev.id = deliveries.event_id) as payload`;
}

/** What one send came to, ready to be recorded. */
export interface DeliveryOutcome {
  id: number;
  webhookId: number;
  /** The lease the send ran under: the row is updated only while it still holds. */
  leaseUntil: number;
  /** The attempt count after this attempt. */
  attempts: number;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  /** `delivered` (now), `dead`, or `retry` at `nextAttemptAt`. */
  state: 'delivered' | 'dead' | 'retry';
  nextAttemptAt: number | null;
}

export interface RecordPolicy {
  now: number;
  workerId: string;
  /** An endpoint failing since this instant or earlier, without a success, is disabled. */
  disableIfFailingSince: number;
}

/**
 * Records the outcomes of sends, whatever their number, with a fixed number of statements (the rows
 * travel as one JSON parameter), and then claims `claim.limit` deliveries, both in one transaction.
 * SQLite, where a commit was the most expensive statement of a delivery: in a savepoint of the
 * database's group commit (db/group-commit.ts), so a round beside ingest shares the commit of the
 * messages queued meanwhile. PostgreSQL, where each statement is a round trip: one call of
 * parley_webhook_round for both (`runRound`).
 *
 * Recorded: every attempt in `delivery_attempts`; each delivery's new state, only while the lease
 * it was sent under holds (if it expired and another worker took the row over, that worker
 * decides); and the endpoints' health. Outcomes of deliveries deleted meanwhile (their webhook was
 * deleted) record nothing. On PostgreSQL the deliveries are locked first, so a concurrent deletion
 * waits for the record or has already removed the row.
 *
 * Endpoint health for the batch: an endpoint with a success in it is healthy (`failing_since`
 * cleared); one with failures only is failing since now unless it already was, and is disabled
 * (status 0) once it has been failing for the disable period.
 */
export async function recordOutcomes(
  db: Db,
  outcomes: DeliveryOutcome[],
  policy: RecordPolicy,
  claim?: ClaimRequest,
): Promise<ClaimedDelivery[]> {
  const postgres = db.dialect === 'postgres';
  if (!outcomes.length) return claim ? claimDeliveries(db, claim) : [];
  if (postgres) return claimed(await runRound(db.kysely, outcomes, policy, claim?.limit ? claim : undefined));
  return grouped(db.kysely, async (trx) => {
    await recordIn(trx, outcomes, policy);
    return claim ? claimIn(trx, postgres, claim) : [];
  });
}

/** SQLite: the record in the statements parley_webhook_round's first joins (in process, each is cheap). */
async function recordIn(trx: Executor, outcomes: DeliveryOutcome[], policy: RecordPolicy): Promise<void> {
  const ids = outcomes.map((o) => o.id);
  const present = await sql<{ id: number }>`select id from deliveries where id in ${idList(ids)}`.execute(trx);
  const still = new Set(present.rows.map((row) => Number(row.id)));
  const kept = outcomes.filter((o) => still.has(o.id));
  if (!kept.length) return;
  const rows = outcomeRows(kept);
  await sql`
    insert into delivery_attempts (delivery_id, at, status_code, duration_ms, error)
    select v.id, cast(${policy.now} as bigint), v.code, v.ms, v.error from ${rows}`.execute(trx);
  await sql`
    update deliveries set
      attempts = v.attempts, last_status_code = v.code, last_error = v.error,
      lease_until = null, leased_by = null,
      status = coalesce(v.status, deliveries.status),
      delivered_at = case when v.status = 'delivered' then cast(${policy.now} as bigint) else deliveries.delivered_at end,
      next_attempt_at = coalesce(v.next_at, deliveries.next_attempt_at)
    from ${rows}
    where deliveries.id = v.id and deliveries.leased_by = ${policy.workerId} and deliveries.lease_until = v.lease`.execute(trx);
  await recordEndpointHealth(trx, kept, policy);
}

async function recordEndpointHealth(trx: Executor, kept: DeliveryOutcome[], policy: RecordPolicy): Promise<void> {
  const healthy = new Set(kept.filter((o) => o.state === 'delivered').map((o) => o.webhookId));
  const failing = [...new Set(kept.filter((o) => !healthy.has(o.webhookId)).map((o) => o.webhookId))];
  if (healthy.size) {
    await sql`update webhooks set failing_since = null where id in ${idList([...healthy])} and failing_since is not null`.execute(trx);
  }
  if (failing.length) {
    const list = idList(failing);
    await sql`update webhooks set failing_since = ${policy.now} where id in ${list} and failing_since is null`.execute(trx);
    await sql`update webhooks set status = 0 where id in ${list} and status = 1 and failing_since <= ${policy.disableIfFailingSince}`.execute(
      trx,
    );
  }
}

/** `(<ids>)` as a subquery over one JSON parameter (SQLite): one statement text for any number of ids. */
function idList(ids: number[]): RawBuilder<unknown> {
  return sql`(select value from json_each(${JSON.stringify(ids)}))`;
}

/** PostgreSQL: the outcomes as parley_webhook_round takes them (a JSON array of objects). */
function outcomeJson(outcomes: DeliveryOutcome[]): string {
  return JSON.stringify(
    outcomes.map((o) => ({
      id: o.id,
      webhook_id: o.webhookId,
      lease: o.leaseUntil,
      attempts: o.attempts,
      code: o.statusCode,
      ms: o.durationMs,
      error: o.error,
      status: retryless(o),
      next_at: nextAt(o),
    })),
  );
}

const nextAt = (o: DeliveryOutcome) => (o.state === 'retry' ? o.nextAttemptAt : null);
/** The delivery's new status, or null when it stays pending (a retry). */
const retryless = (o: DeliveryOutcome) => (o.state === 'retry' ? null : o.state);

/** SQLite: the outcomes as a row source `v` (one JSON parameter). */
function outcomeRows(outcomes: DeliveryOutcome[]): RawBuilder<unknown> {
  // Rows as arrays: SQLite reads an array element faster than an object member (a record of 30
  // outcomes: 121 against 172 us for the deliveries' update, docs/performance.md).
  const json = JSON.stringify(
    outcomes.map((o) => [o.id, o.leaseUntil, o.attempts, o.statusCode, o.durationMs, o.error, retryless(o), nextAt(o)]),
  );
  return sql`(select value ->> 0 as id, value ->> 1 as lease, value ->> 2 as attempts, value ->> 3 as code, value ->> 4 as ms,
      value ->> 5 as error, value ->> 6 as status, value ->> 7 as next_at
    from json_each(${json})) as v`;
}

/**
 * When the earliest pending delivery of an active endpoint is due, or undefined when none is
 * pending: one index lookup per endpoint (deliveries_pending_idx), not a read of every pending row.
 * A leased row counts as due at its `next_attempt_at` (already past): the caller then waits its
 * poll interval, shorter than any lease.
 */
export async function nextDueAt(db: Db): Promise<number | undefined> {
  const { rows } = await sql<{ due: number | null }>`
    select min((select min(d.next_attempt_at) from deliveries d where d.webhook_id = w.id and d.status = 'pending')) as due
    from webhooks w where w.status = 1`.execute(db.kysely);
  const due = rows[0]?.due;
  return due == null ? undefined : Number(due);
}

/** How many deliveries wait on active endpoints, and when the oldest of them was created (metrics). */
export async function pendingDeliveries(db: Db): Promise<{ count: number; oldestCreatedAt: number | undefined }> {
  const { rows } = await sql<{ n: number | string; oldest: number | string | null }>`
    select count(*) as n, min(d.created_at) as oldest
    from deliveries d join webhooks w on w.id = d.webhook_id
    where d.status = 'pending' and w.status = 1`.execute(db.kysely);
  const row = rows[0];
  return { count: Number(row?.n ?? 0), oldestCreatedAt: row?.oldest == null ? undefined : Number(row.oldest) };
}

/**
 * Gives claimed deliveries back without an attempt (their sends were abandoned at shutdown), so
 * the next worker takes them at once instead of after the lease. Only rows still under the lease
 * they were claimed with.
 */
export async function releaseClaims(db: Db, workerId: string, claims: Array<{ id: number; leaseUntil: number }>): Promise<void> {
  for (const c of claims) {
    await db.kysely
      .updateTable('deliveries')
      .set({ lease_until: null, leased_by: null })
      .where('id', '=', c.id)
      .where('leased_by', '=', workerId)
      .where('lease_until', '=', c.leaseUntil)
      .where('status', '=', 'pending')
      .execute();
  }
}
