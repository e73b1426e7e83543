import { dialectOf, type Executor } from '../db/database.js';
import type { EventRow, LeadRow } from '../db/schema.js';
import { claimEvents } from '../domain/automation/distribution.repo.js';
import { distributeLead } from '../domain/automation/distribution.js';
import type { Deps } from '../domain/context.js';
import type { BackgroundWorker } from '../domain/workers.js';
import { OutboxTail } from '../events/outbox-tail.js';
import { enabledRules } from '../domain/automation/rules.repo.js';
import * as repo from './automation.repo.js';
import type { ReplySender } from './rule-actions.js';
import { RuleRunner } from './rule-runner.js';
import { CAUSABLE_EVENTS, causedEvents } from './rule-runs.repo.js';
import { sweepIdleLeads } from './idle-sweep.js';
import { sweepOverdueLeads } from './first-response-sweep.js';

/**
 * How often stopped runs are looked for and idle leads swept; more often when the run lease
 * (PARLEY_AUTOMATION_RUN_LEASE_MS) is shorter, so that a stopped run waits about its lease.
 */
const IDLE_SWEEP_MS = 60_000;

/** How long after a nudge the consumer reads: rules act this much later, on batches of what came meanwhile. */
const SETTLE_MS = 50;

/** New leads distributed per transaction on SQLite (its writer is held meanwhile). */
const DISTRIBUTION_LEADS = 20;

/**
 * Automation, a consumer of committed outbox events (docs/api/automation.md). It reads the events
 * after their transactions committed and keeps its place in the database, so events committed
 * while no process ran it are handled at the next start. Every process runs it; what it does for
 * an event is claimed in the transaction that does it (`automation_claims`), so each happens once.
 *
 * Rules (rule-runner.ts) run for `message.incoming`, `lead.created`, `lead.changed.status` and
 * the idle sweep's `lead.idle` (for the rule it names),
 * except the events their own actions caused, so that rules never set one another off.
 *
 * `lead.created`: a new lead of an integration with distribution on is assigned here, right after
 * its commit, rather than inside the ingest's transaction: ingest stays one batched statement on
 * PostgreSQL, and the assignment is an ordinary `lead.changed` of its own. On PostgreSQL a new
 * lead with an event the rules run for in the same read is assigned in the transaction of those
 * runs, before them (RuleRunner.runEvents): a lead's two transactions were most of what automation
 * cost there.
 */
export class AutomationWorker implements BackgroundWorker {
  readonly name = 'automation';
  private readonly tail: OutboxTail;
  private readonly rules: RuleRunner;
  private timer: NodeJS.Timeout | undefined;
  /** When the kept place was last moved over events passed unread (ms, `performance.now()`). */
  private savedAt = Number.NEGATIVE_INFINITY;
  /** The last read found a rule or a distribution for its events, as the first is taken to (see `newestWhenIdle`). */
  private working = true;

  constructor(
    private readonly deps: Deps,
    sendReply: ReplySender,
  ) {
    this.rules = new RuleRunner(deps, sendReply, deps.config.automationRunLeaseMs);
    this.tail = new OutboxTail(
      deps,
      {
        name: 'automation',
        active: () => true,
        handle: (rows) => this.handle(rows),
        newestWhenIdle: () => this.newestWhenIdle(),
        skipped: (cursor) => this.skipped(cursor),
      },
      {
        resumeFrom: () => repo.resumeCursor(deps.db.kysely, () => this.tail.maxId()),
        // A read costs a transaction and the batch's context: events a moment apart share one.
        settleMs: SETTLE_MS,
      },
    );
  }

  async start(): Promise<void> {
    await this.tail.ensureStarted();
    // Runs left unfinished by a process that stopped are taken up once their lease has passed.
    this.timer ??= setInterval(() => void this.resume(), Math.min(IDLE_SWEEP_MS, this.deps.config.automationRunLeaseMs));
    this.timer.unref();
  }

  /** Handles what was committed since the last look and resumes stopped runs; resolves when done (tests await it). */
  async poll(): Promise<void> {
    await this.tail.ensureStarted();
    await this.tail.poll();
    await this.resume();
  }

  /**
   * Stopped runs, the first-response sweep (first-response-sweep.ts), and the idle sweep
   * (idle-sweep.ts), whose events the next read runs.
   */
  private async resume(): Promise<void> {
    await this.rules.resumeStale().catch((err: unknown) => this.deps.log.warn({ err }, 'resuming automation runs failed'));
    await sweepOverdueLeads(this.deps).catch((err: unknown) => this.deps.log.warn({ err }, 'first-response sweep failed'));
    const idle = await sweepIdleLeads(this.deps).catch((err: unknown) => {
      this.deps.log.warn({ err }, 'idle sweep failed');
      return 0;
    });
    if (idle) await this.tail.poll();
  }

  healthy(): boolean {
    return this.tail.running;
  }

  stop(): Promise<void> {
    clearInterval(this.timer);
    return this.tail.stop();
  }

  /**
   * Whether automation has nothing to do (`repo.newestWhenIdle`), asked only when the last read
   * found no rule or distribution at work: while they work, a read needs no statement more.
   */
  private async newestWhenIdle(): Promise<number | undefined> {
    if (this.working) return undefined;
    const newest = await repo.newestWhenIdle(this.deps.db.kysely);
    this.working = newest === undefined;
    return newest;
  }

  /**
   * With no rule and no distribution, events are passed over unread (`repo.newestWhenIdle`), and
   * the kept place moves at most once a poll interval: a write per read would cost more than the
   * read it spares.
   */
  private async skipped(cursor: number): Promise<void> {
    const now = performance.now();
    if (now - this.savedAt < this.deps.config.eventsPollMs) return;
    this.savedAt = now;
    await repo.saveCursor(this.deps.db.kysely, cursor);
  }

  private async handle(rows: EventRow[]): Promise<void> {
    const db = this.deps.db.kysely;
    const created = new Map<number, number>();
    for (const row of rows) if (row.type === 'lead.created' && row.lead_id !== null) created.set(row.lead_id, row.id);
    const leads = (await repo.leadsToDistribute(db, [...created.keys()])).filter((lead) => created.has(lead.id));
    const postgres = dialectOf(db) === 'postgres';
    if (!postgres) await this.distribute(leads, created);
    const { ruled, distributed } = await this.runRules(
      rows,
      postgres ? new Map(leads.map((l) => [l.id, created.get(l.id) ?? 0])) : undefined,
    );
    if (postgres)
      await this.distribute(
        leads.filter((l) => !distributed.has(l.id)),
        created,
      );
    this.working = leads.length > 0 || ruled;
    await repo.saveCursor(db, this.tail.cursor);
  }

  /** New leads distributed, each taken once (a `distribution` claim of its `lead.created`, `created` by lead id). */
  private async distribute(leads: LeadRow[], created: Map<number, number>): Promise<void> {
    const db = this.deps.db.kysely;
    const distribute = async (trx: Executor, batch: LeadRow[]) => {
      const now = this.deps.clock.now();
      const taken = await claimEvents(
        trx,
        'distribution',
        batch.map((lead) => created.get(lead.id) ?? 0),
        now,
      );
      for (const lead of batch) if (taken.has(created.get(lead.id) ?? 0)) await distributeLead(trx, lead, now);
    };
    // SQLite: a few leads per transaction (a commit each was most of what they cost). PostgreSQL:
    // one each, as a transaction holding several leads' row locks holds up every message to them.
    const per = dialectOf(db) === 'postgres' ? 1 : DISTRIBUTION_LEADS;
    for (let i = 0; i < leads.length; i += per) {
      const batch = leads.slice(i, i + per);
      try {
        await db.transaction().execute((trx) => distribute(trx, batch));
      } catch (err) {
        // Should one fail, each is done again in a transaction of its own.
        if (batch.length === 1) this.deps.log.warn({ err, eventId: created.get(batch[0].id), leadId: batch[0].id }, 'distribution failed');
        else {
          for (const lead of batch) {
            try {
              await db.transaction().execute((trx) => distribute(trx, [lead]));
            } catch (err) {
              this.deps.log.warn({ err, eventId: created.get(lead.id), leadId: lead.id }, 'distribution failed');
            }
          }
        }
      }
    }
  }

  /**
   * Runs the rules of the events, distributing the new leads of `distributing` (lead id ->
   * `lead.created` id) with them where it can; answers whether any enabled rule was found for them,
   * and the leads it distributed.
   */
  private async runRules(rows: EventRow[], distributing?: Map<number, number>): Promise<{ ruled: boolean; distributed: Set<number> }> {
    const db = this.deps.db.kysely;
    const candidates = rows.filter((r) => repo.RULE_EVENTS.includes(r.type) && r.lead_id !== null);
    if (candidates.length) {
      const accounts = [...new Set(candidates.map((r) => r.account_id))];
      const rules = await enabledRules(db, accounts, repo.RULE_EVENTS);
      const relevant = candidates.filter((r) => rules.some((rule) => rule.account_id === r.account_id && rule.event === r.type));
      // Only a type an action can record may have been caused: no look-up for the others.
      const caused = await causedEvents(
        db,
        relevant.flatMap((r) => (CAUSABLE_EVENTS.includes(r.type) ? [r.id] : [])),
      );
      const work = relevant
        .filter((event) => !caused.has(event.id))
        .map((event) => {
          const idleRule = event.type === 'lead.idle' ? (JSON.parse(event.payload ?? '{}') as { ruleId?: number }).ruleId : undefined;
          return {
            event,
            rules: rules.filter(
              (rule) =>
                rule.account_id === event.account_id && rule.event === event.type && (idleRule === undefined || rule.id === idleRule),
            ),
          };
        });
      let distributed = new Set<number>();
      try {
        distributed = await this.rules.runEvents(work, distributing);
      } catch (err) {
        this.deps.log.warn({ err, eventIds: work.map((w) => w.event.id) }, 'automation rules failed');
      }
      return { ruled: rules.length > 0, distributed };
    }
    return { ruled: false, distributed: new Set() };
  }
}
