import { sql } from 'kysely';
import { dialectOf, type Executor } from '../db/database.js';
import type { AutomationRuleRow, EventRow } from '../db/schema.js';
import type { Deps } from '../domain/context.js';
import { claimEvents } from '../domain/automation/distribution.repo.js';
import { distributeLocked } from '../domain/automation/distribution.js';
import type { WorkingHours } from '../domain/automation/working-hours.js';
import { maxEventId } from '../events/outbox-tail.js';
import {
  applyLeadAction,
  attachTagsAtOnce,
  attachTagsOfLeads,
  findTagsToAdd,
  tagToAdd,
  type DatabaseAction,
  type ReplySender,
  type TagCache,
} from './rule-actions.js';
import { actionsOf, contextOf, errorText, foreseen, seeChunk, type ActionResult, type SeenChunk } from './rule-chunk.js';
import { fillTemplate, readsWorkingHours, ruleMatches } from './rule-conditions.js';
import { readLeads, workingHoursOf, type LeadFacts } from './rule-context.js';
import { RunFinisher, type Pending } from './rule-finish.js';
import * as runs from './rule-runs.repo.js';

/**
 * Events whose runs share one transaction: enough that a message's ten runs cost a fraction of a
 * commit each, few enough that the transaction holds SQLite's writer (and, on PostgreSQL, the
 * leads' row locks) only briefly.
 */
const CHUNK_EVENTS = 50;

/**
 * A lead the transaction acts on: locked, as it is now with its tags, and the newest event id
 * before its first `setStatus` (undefined while none ran).
 */
interface LeadState extends LeadFacts {
  before: number | undefined;
  /** Tags `addTag` actions added that are not attached yet (attachTagsAtOnce). */
  adding: number[];
  /** An action moved the lead's status: its `lead.changed.status` is marked caused (runs.markCaused). */
  moved: boolean;
}

/** What a chunk's transaction did: the runs stopped at a `reply`, and the new leads it distributed (or found taken). */
interface Outcome {
  pending: Pending[];
  distributed: number[];
}

/**
 * Runs the accounts' matching rules for a batch of events, each at most once (the event is taken
 * for its rules, a `rules` row in automation_claims), their actions in order. The runs of up to
 * CHUNK_EVENTS events are taken and their database actions applied in one transaction, with each
 * run's results: a run is done or not together with its actions. A run that may change something
 * has a row of its own (its progress and lease); a run whose every action adds a tag the lead has
 * is quiet: a row per rule and transaction holds those (migration 0140). An action that fails is undone alone (a savepoint of its own),
 * recorded as failed, and the next goes on. A `reply` leaves the transaction (RunFinisher): it is sent after
 * the commit with a customId made from rule, event and action, and the actions after it each
 * commit with the run's progress, so a run resumed after a crash neither repeats nor skips one.
 */
export class RuleRunner {
  private readonly finisher: RunFinisher;

  constructor(
    private readonly deps: Deps,
    sendReply: ReplySender,
    /** A run cut short is resumed by another process after this. */
    private readonly leaseMs: number,
  ) {
    this.finisher = new RunFinisher(deps, sendReply, leaseMs);
  }

  private get db() {
    return this.deps.db.kysely;
  }

  /**
   * `work`: events in id order, each with the account's rules for it (rules of the event's type, in
   * order). `distributing` (PostgreSQL): new leads to distribute, by lead id, with their
   * `lead.created` event ids; a chunk with an event of such a lead distributes it first, in the
   * transaction of its runs (one lock and one commit for both). Answers the leads it distributed
   * or found taken; the caller distributes the rest.
   */
  async runEvents(
    work: Array<{ event: EventRow; rules: AutomationRuleRow[] }>,
    distributing: Map<number, number> = new Map(),
  ): Promise<Set<number>> {
    const distributed = new Set<number>();
    const items = work.filter((w) => w.event.lead_id !== null && w.rules.length);
    if (!items.length) return distributed;
    // Working hours only of the accounts some rule of which reads them: a statement less per batch otherwise.
    const hours = await workingHoursOf(this.db, [
      ...new Set(items.flatMap((i) => (i.rules.some(readsWorkingHours) ? [i.event.account_id] : []))),
    ]);
    for (let i = 0; i < items.length; i += CHUNK_EVENTS) {
      const chunk = items.slice(i, i + CHUNK_EVENTS);
      let outcome: Outcome;
      try {
        // Actions rarely fail: first without a savepoint each (two statements fewer per action);
        // when one does, the chunk is rolled back whole and done again with them, and without
        // its leads' distribution, which the caller then does on its own.
        outcome = await this.applyChunk(chunk, hours, false, distributing);
      } catch {
        try {
          outcome = await this.applyChunk(chunk, hours, true, new Map());
        } catch (err) {
          this.deps.log.warn({ err, eventIds: chunk.map((c) => c.event.id) }, 'automation rules failed');
          continue;
        }
      }
      for (const id of outcome.distributed) distributed.add(id);
      await this.finisher.finishAll(outcome.pending);
    }
    return distributed;
  }

  private async applyChunk(
    chunk: Array<{ event: EventRow; rules: AutomationRuleRow[] }>,
    hours: Map<number, WorkingHours>,
    guarded: boolean,
    distributing: Map<number, number>,
  ): Promise<Outcome> {
    // The chunk's leads read with their tags: what the conditions read and the actions change. On
    // PostgreSQL they are read without a lock and outside the transaction first: a lead whose
    // matching runs all add tags it has is only read (its quiet runs change nothing of it), and
    // only the leads some run acts on are locked, in id order, and read again under the lock. A
    // chunk no run acts on (a conversation going on) is then one more statement, its claims and
    // quiet rows (claimQuietChunk): no transaction, no row lock (a write each on PostgreSQL) and
    // nothing held up for the messages to its leads (docs/performance.md, "Automation's batches").
    if (dialectOf(this.db) !== 'postgres') {
      return this.db.transaction().execute(async (trx) => ({
        ...(await this.applySeen(trx, await seeChunk(trx, chunk, hours, true), guarded)),
        distributed: [],
      }));
    }
    const seen = await seeChunk(this.db, chunk, hours, false);
    // New leads to distribute are acted on too: locked with the others, distributed first.
    const fresh = [...new Set(seen.plans.flatMap((p) => (distributing.has(p.lead.lead.id) ? [p.lead.lead.id] : [])))];
    const acting = [
      ...new Set([
        ...fresh,
        ...seen.plans.flatMap((p) => (p.matching.some((rule) => !foreseen(rule, p.lead.tags)) ? [p.lead.lead.id] : [])),
      ]),
    ].sort((a, b) => a - b);
    if (!acting.length) {
      const claimed = seen.plans.filter((p) => p.matching.length);
      const quiet = claimed.flatMap((p) =>
        p.matching.map((rule) => ({
          ruleId: rule.id,
          eventId: p.event.id,
          leadId: p.event.lead_id,
          results: foreseen(rule, p.lead.tags) ?? [],
        })),
      );
      await runs.claimQuietChunk(
        this.db,
        claimed.map((p) => p.event.id),
        quiet,
        this.deps.clock.now(),
      );
      return { pending: [], distributed: [] };
    }
    return this.db.transaction().execute(async (trx) => {
      const locked = await readLeads(trx, acting, true);
      for (const id of acting) {
        const lead = locked.get(id);
        if (lead) seen.read.set(id, lead);
        else seen.read.delete(id);
      }
      const distributed = await this.distribute(trx, fresh, seen.read, distributing);
      return { ...(await this.applySeen(trx, await seeChunk(trx, chunk, hours, false, seen.read), guarded)), distributed };
    });
  }

  /**
   * The chunk's new leads (locked and read in `read`) distributed in its transaction, each taken
   * once (a `distribution` claim of its `lead.created`); `read` then holds them as assigned.
   * Answers the leads taken here, or by another process before.
   */
  private async distribute(trx: Executor, leadIds: number[], read: Map<number, LeadFacts>, distributing: Map<number, number>) {
    if (!leadIds.length) return [];
    const taken = await claimEvents(
      trx,
      'distribution',
      leadIds.map((id) => distributing.get(id) ?? 0),
      this.deps.clock.now(),
    );
    const leads = leadIds.flatMap((id) => {
      const facts = read.get(id);
      return facts && taken.has(distributing.get(id) ?? 0) ? [facts.lead] : [];
    });
    for (const [id, after] of await distributeLocked(trx, leads, this.deps.clock.now())) {
      const facts = read.get(id);
      if (facts) read.set(id, { ...facts, lead: after });
    }
    return leadIds;
  }

  /** The chunk's runs in `trx`, the leads they act on read under the lock. */
  private async applySeen(trx: Executor, seen: SeenChunk, guarded: boolean): Promise<{ pending: Pending[] }> {
    const now = this.deps.clock.now();
    const { read, plans } = seen;
    const leads = new Map<number, LeadState>([...read].map(([id, lead]) => [id, { ...lead, before: undefined, adding: [], moved: false }]));
    const tags: TagCache = new Map();
    const saved: Array<{ id: number; results: ActionResult[]; done: boolean }> = [];
    const pending: Pending[] = [];
    const quiet: runs.QuietRun[] = [];
    const states = plans.map((p) => ({ ...p, state: leads.get(p.lead.lead.id) as LeadState }));
    const taken = await claimEvents(
      trx,
      'rules',
      states.flatMap((p) => (p.matching.length ? [p.event.id] : [])),
      now,
    );
    const wanted = (event: EventRow, rules: AutomationRuleRow[]) =>
      rules.map((rule) => ({ ruleId: rule.id, eventId: event.id, leadId: event.lead_id }));
    // A run row (progress and lease) only for the runs that may change something: a run whose
    // every action adds a tag the lead has is quiet, kept in the batch's quiet rows.
    const asked = states.flatMap((plan) =>
      taken.has(plan.event.id)
        ? wanted(
            plan.event,
            plan.matching.filter((rule) => !foreseen(rule, plan.state.tags)),
          )
        : [],
    );
    const claimed = await runs.claimRuns(trx, asked, now, this.leaseMs);
    const fresh = new Set(claimed.fresh.map((r) => r.id));
    const askedKeys = new Set(asked.map((r) => `${r.ruleId}:${r.eventId}`));
    const byKey = new Map([...claimed.fresh, ...claimed.resumed].map((r) => [`${r.rule_id}:${r.event_id}`, r]));
    // The tags the runs taken add and their leads lack, looked up at once (a run matching only
    // later, below, looks its own up).
    const adding = new Map<number, Set<string>>();
    const planOf = new Map(states.map((p) => [p.event.id, p]));
    for (const run of [...claimed.fresh, ...claimed.resumed]) {
      const plan = planOf.get(run.event_id);
      const rule = plan?.matching.find((r) => r.id === run.rule_id);
      if (!plan || !rule) continue;
      for (const action of actionsOf(rule)) {
        if (action.type !== 'addTag' || plan.state.tags.includes(action.tag)) continue;
        const account = plan.state.lead.account_id;
        const set = adding.get(account) ?? new Set<string>();
        adding.set(account, set.add(action.tag));
      }
    }
    await findTagsToAdd(trx, adding, tags);
    const unwanted: number[] = [];
    for (const plan of states) {
      const { event, state } = plan;
      // The lead's tags of its previous event in the chunk, before this event's actions record theirs.
      await this.attachAdding(trx, state, now);
      // Checked again: earlier events' actions may have changed the lead.
      const ctx = contextOf(plan.known, state);
      const matching = plan.rules.filter((rule) => ruleMatches(rule, ctx));
      // An event none of whose rules matched as read, matching now, is taken now.
      if (!plan.matching.length && matching.length) for (const id of await claimEvents(trx, 'rules', [event.id], now)) taken.add(id);
      if (!taken.has(event.id)) continue;
      for (const rule of plan.matching) {
        const run = byKey.get(`${rule.id}:${event.id}`);
        if (run && fresh.has(run.id) && !matching.includes(rule)) unwanted.push(run.id);
      }
      for (const rule of matching) {
        const key = `${rule.id}:${event.id}`;
        let run = byKey.get(key);
        if (!run) {
          // Done already, or held by another process.
          if (askedKeys.has(key)) continue;
          const results = foreseen(rule, state.tags);
          if (results) {
            quiet.push({ ruleId: rule.id, eventId: event.id, leadId: event.lead_id, results });
            continue;
          }
          // Quiet as read, no longer (an earlier action removed a tag), or matching only now.
          const more = await runs.claimRuns(trx, wanted(event, [rule]), now, this.leaseMs);
          run = more.fresh[0] ?? more.resumed[0];
          if (!run) continue;
        }
        const actions = actionsOf(rule);
        const results = JSON.parse(run.results) as ActionResult[];
        const started = results.length;
        while (results.length < actions.length) {
          const action = actions[results.length];
          if (action.type === 'reply') break;
          const text = action.type === 'note' ? fillTemplate(action.text, ctx) : '';
          results.push(await this.apply(trx, { action, state, text, now, tags, guarded, rule, eventId: event.id }));
        }
        const done = results.length === actions.length;
        if (done || results.length > started) saved.push({ id: run.id, results, done });
        if (!done) pending.push({ rule, run: { ...run, results: JSON.stringify(results) }, ctx: contextOf(plan.known, state) });
      }
    }
    await runs.deleteRuns(trx, unwanted);
    // The tags each lead's last event added: one statement for the chunk on PostgreSQL.
    const attaching = [...leads.values()].filter((state) => state.adding.length);
    const attached = await attachTagsOfLeads(
      trx,
      attaching.map((state) => ({ lead: state.lead, tagIds: state.adding })),
      now,
    );
    for (const state of attaching) {
      state.lead = attached.get(state.lead.id) ?? state.lead;
      state.adding = [];
    }
    for (const [leadId, state] of leads)
      if (state.moved && state.before !== undefined) await runs.markCaused(trx, leadId, state.before, now);
    await runs.saveManyResults(trx, saved);
    await runs.saveQuietRuns(trx, quiet, now);
    return { pending };
  }

  private async apply(
    trx: Executor,
    p: {
      action: DatabaseAction;
      state: LeadState;
      text: string;
      now: number;
      tags: TagCache;
      guarded: boolean;
      rule: AutomationRuleRow;
      eventId: number;
    },
  ): Promise<ActionResult> {
    const { action, state } = p;
    // A tag the lead has (read under the lock): attaching it again changes nothing and records no
    // event, so it costs no statement: most messages of a conversation find their tags there.
    if (action.type === 'addTag' && state.tags.includes(action.tag)) return { type: action.type, ok: true };
    // Of the events actions record, rules react only to a `setStatus`'s `lead.changed.status`
    // (runs.CAUSABLE_EVENTS): the lead's after this id are marked, so that no rule reacts to them.
    if (action.type === 'setStatus') state.before ??= await maxEventId(trx);
    if (action.type === 'addTag' && !p.guarded) {
      // Attached with the event's other new tags at once (a failure rolls the chunk back, and the
      // guarded run then attaches each on its own).
      state.adding.push((await tagToAdd(trx, state.lead, action.tag, p.now, p.tags)).id);
      state.tags.push(action.tag);
      return { type: action.type, ok: true };
    }
    await this.attachAdding(trx, state, p.now);
    if (p.guarded) await sql`savepoint automation_action`.execute(trx);
    try {
      const was = state.lead.status_id;
      state.lead = await applyLeadAction(trx, action, state.lead, p.text, p.now, p.tags);
      if (state.lead.status_id !== was) state.moved = true;
      if (p.guarded) await sql`release savepoint automation_action`.execute(trx);
    } catch (err) {
      if (!p.guarded) throw err;
      await sql`rollback to savepoint automation_action`.execute(trx);
      await sql`release savepoint automation_action`.execute(trx);
      // Tags the undone action created are gone with it.
      p.tags.clear();
      this.deps.log.warn({ err, ruleId: p.rule.id, eventId: p.eventId, action: action.type }, 'automation action failed');
      return { type: action.type, ok: false, error: errorText(err) };
    }
    if (action.type === 'addTag') state.tags.push(action.tag);
    if (action.type === 'removeTag') state.tags = state.tags.filter((t) => t !== action.tag);
    return { type: action.type, ok: true };
  }

  /** Attaches the tags the lead's `addTag` actions added so far (attachTagsAtOnce). */
  private async attachAdding(trx: Executor, state: LeadState, now: number): Promise<void> {
    if (!state.adding.length) return;
    state.lead = await attachTagsAtOnce(trx, state.lead, state.adding, now);
    state.adding = [];
  }

  /** Runs whose process stopped mid-way: the remaining actions, with the context as it is now. */
  resumeStale(): Promise<void> {
    return this.finisher.resumeStale();
  }
}
