import type { EventRow } from '../db/schema.js';
import { claimEvent } from '../domain/automation/distribution.repo.js';
import { distributeLead } from '../domain/automation/distribution.js';
import type { Deps } from '../domain/context.js';
import type { BackgroundWorker } from '../domain/workers.js';
import { OutboxTail } from '../events/outbox-tail.js';
import * as repo from './automation.repo.js';

/**
 * Automation, a consumer of committed outbox events (docs/api/automation.md). It reads the events
 * after their transactions committed and keeps its place in the database, so events committed
 * while no process ran it are handled at the next start. Every process runs it; what it does for
 * an event is claimed in the transaction that does it (`automation_claims`), so each happens once.
 *
 * `lead.created`: a new lead of an integration with distribution on is assigned here, right after
 * its commit, rather than inside the ingest's transaction: ingest stays one batched statement on
 * PostgreSQL, and the assignment is an ordinary `lead.changed` of its own.
 */
export class AutomationWorker implements BackgroundWorker {
  readonly name = 'automation';
  private readonly tail: OutboxTail;

  constructor(private readonly deps: Deps) {
    this.tail = new OutboxTail(
      deps,
      { name: 'automation', active: () => true, handle: (rows) => this.handle(rows) },
      { resumeFrom: () => repo.resumeCursor(deps.db.kysely, () => this.tail.maxId()) },
    );
  }

  start(): Promise<void> {
    return this.tail.ensureStarted();
  }

  /** Handles what was committed since the last look; resolves when done (tests await it). */
  async poll(): Promise<void> {
    await this.tail.ensureStarted();
    await this.tail.poll();
  }

  healthy(): boolean {
    return this.tail.running;
  }

  stop(): Promise<void> {
    return this.tail.stop();
  }

  private async handle(rows: EventRow[]): Promise<void> {
    const db = this.deps.db.kysely;
    const created = new Map<number, number>();
    for (const row of rows) if (row.type === 'lead.created' && row.lead_id !== null) created.set(row.lead_id, row.id);
    for (const lead of await repo.leadsToDistribute(db, [...created.keys()])) {
      const eventId = created.get(lead.id);
      if (eventId === undefined) continue;
      try {
        await db.transaction().execute(async (trx) => {
          const now = this.deps.clock.now();
          if (await claimEvent(trx, 'distribution', eventId, now)) await distributeLead(trx, lead, now);
        });
      } catch (err) {
        this.deps.log.warn({ err, eventId, leadId: lead.id }, 'distribution failed');
      }
    }
    await repo.saveCursor(db, this.tail.cursor);
  }
}
