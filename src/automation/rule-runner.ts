import type { AutomationRuleRow, AutomationRunRow, EventRow } from '../db/schema.js';
import { workingHoursOf } from '../domain/automation/account-automation.repo.js';
import type { Action } from '../domain/automation/rules.types.js';
import type { Deps } from '../domain/context.js';
import { tagsOfLeads } from '../domain/leads/leads.repo.js';
import { findOwner } from '../domain/users/users.repo.js';
import { applyLeadAction, type ReplySender } from './rule-actions.js';
import { fillTemplate, ruleMatches, type RuleContext } from './rule-conditions.js';
import * as runs from './rule-runs.repo.js';
import { maxEventId } from '../events/outbox-tail.js';

/** A run cut short is resumed by another process after this. */
export const RUN_LEASE_MS = 60_000;

interface ActionResult {
  type: string;
  ok: boolean;
  error?: string;
}

interface EventPayload {
  isNewCustomer?: boolean;
  message?: { message?: { text?: string } };
}

/**
 * Runs the account's matching rules for one event, each at most once (a run row per rule and
 * event), their actions in order: a database action and the run's progress commit together, a
 * reply carries a customId made from rule, event and action, so a run resumed after a crash
 * neither repeats nor skips an action. A failed action is recorded and the next one goes on.
 */
export class RuleRunner {
  constructor(
    private readonly deps: Deps,
    private readonly sendReply: ReplySender,
  ) {}

  private get db() {
    return this.deps.db.kysely;
  }

  async runEvent(event: EventRow, rules: AutomationRuleRow[]): Promise<void> {
    if (event.lead_id === null || !rules.length) return;
    const ctx = await this.context(event);
    if (!ctx) return;
    for (const rule of rules) {
      if (!ruleMatches(rule, ctx)) continue;
      const run = await runs.claimRun(this.db, {
        ruleId: rule.id,
        eventId: event.id,
        leadId: event.lead_id,
        now: this.deps.clock.now(),
        leaseMs: RUN_LEASE_MS,
      });
      if (run) await this.perform(rule, run, ctx);
    }
  }

  /** Runs whose process stopped mid-way: the remaining actions, with the context as it is now. */
  async resumeStale(): Promise<void> {
    for (const stale of await runs.staleRuns(this.db, this.deps.clock.now())) {
      const rule = await this.db.selectFrom('automation_rules').selectAll().where('id', '=', stale.rule_id).executeTakeFirst();
      const event = await this.db.selectFrom('events').selectAll().where('id', '=', stale.event_id).executeTakeFirst();
      const run = await runs.claimRun(this.db, {
        ruleId: stale.rule_id,
        eventId: stale.event_id,
        leadId: stale.lead_id,
        now: this.deps.clock.now(),
        leaseMs: RUN_LEASE_MS,
      });
      if (!run) continue;
      const ctx = rule && event ? await this.context(event) : undefined;
      if (!rule || !ctx) {
        await runs.saveResults(this.db, run.id, JSON.parse(run.results) as unknown[], true);
        continue;
      }
      await this.perform(rule, run, ctx);
    }
  }

  private async perform(rule: AutomationRuleRow, run: AutomationRunRow, ctx: RuleContext): Promise<void> {
    const actions = JSON.parse(rule.actions) as Action[];
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
          const before = await maxEventId(trx);
          await applyLeadAction(trx, action, ctx.lead.id, text, now);
          await runs.markCaused(trx, ctx.lead.id, before, now);
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

  private async context(event: EventRow): Promise<RuleContext | undefined> {
    if (event.lead_id === null) return undefined;
    const row = await this.db
      .selectFrom('leads as l')
      .innerJoin('integrations as i', 'i.id', 'l.integration_id')
      .innerJoin('customers as c', 'c.id', 'l.customer_id')
      .selectAll('l')
      .select(['i.type as integration_type', 'c.name as customer_name'])
      .where('l.id', '=', event.lead_id)
      .executeTakeFirst();
    if (!row) return undefined;
    const { integration_type, customer_name, ...lead } = row;
    const payload = (event.payload ? JSON.parse(event.payload) : {}) as EventPayload;
    const customerIsNew =
      typeof payload.isNewCustomer === 'boolean'
        ? payload.isNewCustomer
        : !(await runs.customerHasEarlierLead(this.db, lead.customer_id, lead.id));
    return {
      lead,
      integrationType: integration_type,
      tags: (await tagsOfLeads(this.db, [lead.id])).get(lead.id) ?? [],
      text: event.type === 'message.incoming' ? (payload.message?.message?.text ?? '') : undefined,
      customerIsNew,
      customerName: customer_name ?? '',
      at: event.created_at,
      hours: await workingHoursOf(this.db, lead.account_id),
    };
  }
}

function errorText(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).slice(0, 500);
}
