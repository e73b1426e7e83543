import type { AutomationRuleRow } from '../../db/schema.js';
import type { AuthContext } from '../auth/auth-context.js';
import type { Deps } from '../context.js';
import { invalid, notFound, type ErrorDetail } from '../errors.js';
import { requireOwner } from '../policy/policy.js';
import * as repo from './rules.repo.js';
import { cleanAction, cleanCondition, MAX_RULES, ruleProblems, type Action, type Condition, type RuleInput } from './rules.types.js';

export interface Rule {
  id: number;
  name: string;
  enabled: boolean;
  event: string;
  idleMinutes?: number;
  conditions: Condition[];
  actions: Action[];
  order: number;
}

export interface RuleRun {
  eventId: number;
  leadId: number | null;
  at: number;
  actions: Array<{ type: string; ok: boolean; error?: string }>;
}

const RUNS_SHOWN = 50;

export function presentRule(row: AutomationRuleRow): Rule {
  return {
    id: row.id,
    name: row.name,
    enabled: row.enabled === 1,
    event: row.event,
    ...(row.idle_minutes === null ? {} : { idleMinutes: row.idle_minutes }),
    conditions: JSON.parse(row.conditions) as Condition[],
    actions: JSON.parse(row.actions) as Action[],
    order: row.position,
  };
}

/** The account's automation rules (docs/api/automation.md), owner only. */
export class RulesService {
  constructor(private readonly deps: Deps) {}

  private get db() {
    return this.deps.db.kysely;
  }

  async list(auth: AuthContext): Promise<Rule[]> {
    requireOwner(auth);
    return (await repo.listRules(this.db, auth.accountId)).map(presentRule);
  }

  async get(auth: AuthContext, id: number): Promise<Rule> {
    requireOwner(auth);
    const row = await repo.findRule(this.db, auth.accountId, id);
    if (!row) throw notFound('Rule not found');
    return presentRule(row);
  }

  /** More than MAX_RULES rules, or any bad part: 400 naming it, nothing stored. */
  async create(auth: AuthContext, input: RuleInput): Promise<Rule> {
    requireOwner(auth);
    return this.db.transaction().execute(async (trx) => {
      if ((await repo.countRules(trx, auth.accountId)) >= MAX_RULES) {
        throw invalid(`An account has at most ${MAX_RULES} rules`, [{ path: 'body', message: `at most ${MAX_RULES} rules` }]);
      }
      const cols = await this.columns(trx, auth.accountId, input);
      const now = this.deps.clock.now();
      const position = input.order ?? (await repo.countRules(trx, auth.accountId));
      return presentRule(await repo.insertRule(trx, { ...cols, account_id: auth.accountId, position, created_at: now, updated_at: now }));
    });
  }

  async update(auth: AuthContext, id: number, input: RuleInput): Promise<Rule> {
    requireOwner(auth);
    return this.db.transaction().execute(async (trx) => {
      const existing = await repo.findRule(trx, auth.accountId, id);
      if (!existing) throw notFound('Rule not found');
      const cols = await this.columns(trx, auth.accountId, input);
      const row = await repo.updateRule(trx, auth.accountId, id, {
        ...cols,
        position: input.order ?? existing.position,
        updated_at: this.deps.clock.now(),
      });
      if (!row) throw notFound('Rule not found');
      return presentRule(row);
    });
  }

  async remove(auth: AuthContext, id: number): Promise<void> {
    requireOwner(auth);
    if (!(await repo.deleteRule(this.db, auth.accountId, id))) throw notFound('Rule not found');
  }

  /** The rule's latest runs, newest first. */
  async runs(auth: AuthContext, id: number): Promise<RuleRun[]> {
    requireOwner(auth);
    if (!(await repo.findRule(this.db, auth.accountId, id))) throw notFound('Rule not found');
    return (await repo.recentRuns(this.db, id, RUNS_SHOWN)).map((r) => ({
      eventId: r.eventId,
      leadId: r.leadId,
      at: r.at,
      actions: JSON.parse(r.results) as RuleRun['actions'],
    }));
  }

  /** Checks the rule (shape, then the account's statuses and employees it names) into its columns. */
  private async columns(db: typeof this.db, accountId: number, input: RuleInput) {
    const problems = ruleProblems(input);
    if (problems.length) throw invalid('Invalid rule', problems);
    const conditions = (input.conditions ?? []).map(cleanCondition);
    const actions = input.actions.map(cleanAction);
    const details: ErrorDetail[] = [];
    const statusIds = actions.flatMap((a) => (a.type === 'setStatus' ? [a.statusId] : []));
    const userIds = actions.flatMap((a) => (a.type === 'assign' ? [a.userId] : []));
    const statuses = await repo.accountStatusIds(db, accountId, statusIds);
    const users = await repo.confirmedEmployeeIds(db, accountId, userIds);
    actions.forEach((a, i) => {
      if (a.type === 'setStatus' && !statuses.has(a.statusId))
        details.push({ path: `body.actions.${i}.statusId`, message: 'no such status' });
      if (a.type === 'assign' && !users.has(a.userId))
        details.push({ path: `body.actions.${i}.userId`, message: 'not a confirmed employee' });
    });
    if (details.length) throw invalid('The rule names what this account does not have', details);
    return {
      name: input.name.trim(),
      enabled: input.enabled === false ? 0 : 1,
      event: input.event,
      idle_minutes: input.event === 'lead.idle' ? (input.idleMinutes ?? null) : null,
      conditions: JSON.stringify(conditions),
      actions: JSON.stringify(actions),
    };
  }
}
