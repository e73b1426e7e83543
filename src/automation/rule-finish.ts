import type { AutomationRuleRow, AutomationRunRow } from '../db/schema.js';
import type { Deps } from '../domain/context.js';
import { findOwner } from '../domain/users/users.repo.js';
import { maxEventId } from '../events/outbox-tail.js';
import { applyLeadAction, lockedLead, type ReplySender } from './rule-actions.js';
import { actionsOf, contextOf, errorText, type ActionResult } from './rule-chunk.js';
import { fillTemplate, type RuleContext } from './rule-conditions.js';
import { eventFacts, readLeads, workingHoursOf, type LeadFacts } from './rule-context.js';
import * as runs from './rule-runs.repo.js';

/** A run stopped at a `reply`, which goes out after the transaction that took the run committed. */
export interface Pending {
  rule: AutomationRuleRow;
  run: AutomationRunRow;
  ctx: RuleContext;
}

/**
 * The part of runs that leaves the batch's transaction: a `reply` goes out after the commit with a
 * customId made from rule, event and action, and the actions after it each commit with the run's
 * progress, so a run resumed after a crash (resumeStale) neither repeats nor skips one.
 */
export class RunFinisher {
  /** Runs this process is finishing (replies): not resumed as stale meanwhile, however long a send takes. */
  private readonly busy = new Set<number>();

  constructor(
    private readonly deps: Deps,
    private readonly sendReply: ReplySender,
    /** A run cut short is resumed by another process after this. */
    private readonly leaseMs: number,
  ) {}

  private get db() {
    return this.deps.db.kysely;
  }

  /** The runs a transaction stopped at a `reply`, held all at once: a reply may take longer than the lease, and the next runs wait for it. */
  async finishAll(pending: Pending[]): Promise<void> {
    for (const p of pending) this.busy.add(p.run.id);
    for (const p of pending) await this.finish(p);
  }

  /** Sends a run's reply and does the rest; `busy` holds the run meanwhile. */
  private async finish(p: Pending): Promise<void> {
    this.busy.add(p.run.id);
    try {
      await this.perform(p.rule, p.run, p.ctx);
    } catch (err) {
      this.deps.log.warn({ err, ruleId: p.rule.id, eventId: p.run.event_id }, 'automation run failed');
    } finally {
      this.busy.delete(p.run.id);
    }
  }

  /** Runs whose process stopped mid-way: the remaining actions, with the context as it is now. */
  async resumeStale(): Promise<void> {
    for (const stale of await runs.staleRuns(this.db, this.deps.clock.now())) {
      if (this.busy.has(stale.id)) continue;
      const rule = await this.db.selectFrom('automation_rules').selectAll().where('id', '=', stale.rule_id).executeTakeFirst();
      // A deleted rule's runs went with it.
      if (!rule) continue;
      const event = await this.db.selectFrom('events').selectAll().where('id', '=', stale.event_id).executeTakeFirst();
      const run = await runs.claimRun(this.db, {
        ruleId: stale.rule_id,
        eventId: stale.event_id,
        leadId: stale.lead_id,
        now: this.deps.clock.now(),
        leaseMs: this.leaseMs,
      });
      if (!run) continue;
      const leads = event?.lead_id != null ? await readLeads(this.db, [event.lead_id], false) : new Map<number, LeadFacts>();
      const lead = event?.lead_id != null ? leads.get(event.lead_id) : undefined;
      const known =
        event && lead
          ? (await eventFacts(this.db, [event], leads, await workingHoursOf(this.db, [event.account_id]))).get(event.id)
          : undefined;
      if (!known || !lead) {
        await runs.saveResults(this.db, run.id, JSON.parse(run.results) as unknown[], true);
        continue;
      }
      await this.finish({ rule, run, ctx: contextOf(known, lead) });
    }
  }

  /** The rest of a run from where its results end, each database action in a transaction with the run's progress. */
  private async perform(rule: AutomationRuleRow, run: AutomationRunRow, ctx: RuleContext): Promise<void> {
    const actions = actionsOf(rule);
    const results = JSON.parse(run.results) as ActionResult[];
    for (let i = results.length; i < actions.length; i++) {
      const action = actions[i];
      const last = i === actions.length - 1;
      if (action.type === 'reply') {
        const result = await this.reply(rule, run, i, fillTemplate(action.text, ctx), ctx);
        results.push(result);
        await runs.saveResults(this.db, run.id, results, last);
        continue;
      }
      const text = action.type === 'note' ? fillTemplate(action.text, ctx) : '';
      try {
        await this.db.transaction().execute(async (trx) => {
          const now = this.deps.clock.now();
          const lead = await lockedLead(trx, ctx.lead.id);
          if (!lead) throw new Error('the lead no longer exists');
          const before = action.type === 'setStatus' ? await maxEventId(trx) : undefined;
          const after = await applyLeadAction(trx, action, lead, text, now);
          if (before !== undefined && after.status_id !== lead.status_id) await runs.markCaused(trx, lead.id, before, now);
          await runs.saveResults(trx, run.id, [...results, { type: action.type, ok: true }], last);
        });
        results.push({ type: action.type, ok: true });
      } catch (err) {
        this.deps.log.warn({ err, ruleId: rule.id, eventId: run.event_id, action: action.type }, 'automation action failed');
        results.push({ type: action.type, ok: false, error: errorText(err) });
        await runs.saveResults(this.db, run.id, results, last);
      }
    }
    if (!actions.length) await runs.saveResults(this.db, run.id, results, true);
  }

  /**
   * The reply goes out with the account owner's reach but is stored as sent by automation (no
   * employee: docs/api/automation.md); its customId makes a resumed run send nothing twice.
   */
  private async reply(
    rule: AutomationRuleRow,
    run: AutomationRunRow,
    index: number,
    text: string,
    ctx: RuleContext,
  ): Promise<ActionResult> {
    try {
      const owner = await findOwner(this.db, ctx.lead.account_id);
      if (!owner) throw new Error('the account has no owner');
      const auth = { accountId: owner.account_id, userId: owner.id, role: owner.role, typ: 'access' as const, user: owner };
      await this.sendReply(auth, ctx.lead.id, { message: { text }, customId: `automation-${rule.id}-${run.event_id}-${index}` });
      return { type: 'reply', ok: true };
    } catch (err) {
      this.deps.log.warn({ err, ruleId: rule.id, eventId: run.event_id }, 'automation reply refused');
      return { type: 'reply', ok: false, error: errorText(err) };
    }
  }
}
