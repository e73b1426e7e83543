import type { Updateable } from 'kysely';
import type { Executor } from '../../db/database.js';
import type { LeadRow, LeadsTable, LeadStatusType } from '../../db/schema.js';
import { recordEvent } from '../../events/outbox.js';
import type { AuthContext } from '../auth/auth-context.js';
import type { Deps } from '../context.js';
import { customerView, normalizeCustomerPatch } from '../customers/customers.types.js';
import { defaultCountryOf } from '../accounts/account-settings.js';
import { responseSettingsOf } from '../automation/account-automation.repo.js';
import { overdueCutoff } from '../automation/working-time.js';
import { insertCustomer } from '../customers/customers.repo.js';
import { AppError, invalid } from '../errors.js';
import { findIntegration } from '../integrations/integrations.repo.js';
import { findPaymentType } from '../payment-types/payment-types.repo.js';
import { canUseIntegration, scopeOf, visibleCustomer, visibleLead, type Scope } from '../policy/policy.js';
import { findStatus, firstStatusOfType, listStatuses } from '../statuses/statuses.repo.js';
import { compareStatuses } from '../statuses/statuses.types.js';
import { ensureTag, findTag } from '../tags/tags.repo.js';
import { findUser } from '../users/users.repo.js';
import { statusTypesOf } from './lead-filters.js';
import { changedLeadFields, leadFieldColumns } from './lead-fields.js';
import { recordLeadChange } from './lead-events.js';
import { presentLead } from './lead-presenter.js';
import * as repo from './leads.repo.js';
import { breakdown } from './lead-statistics.repo.js';
import { responseTimes, workingMeasure } from './response-times.js';
import { LeadReadCache, queryKey } from './read-cache.js';
import type {
  AcceptInput,
  FunnelResult,
  LeadFieldsInput,
  LeadFilters,
  LeadList,
  LeadListEntry,
  LeadListResult,
  LeadQuery,
  LeadStatistics,
  NewLeadInput,
  ReadSource,
} from './leads.types.js';

const TAG_MAX = 100;
const DAY_MS = 86_400_000;

/**
 * Leads (docs/api/leads.md): lists and funnel, one lead, edits, read, accept, tags,
 * creation and statistics. Every read and write goes through the caller's visibility (policy.ts);
 * a lead the caller may not see is "not found". Each change records its events in its own
 * transaction, from one place (`recordLeadChange`). List pages and totals go through the read cache
 * (read-cache.ts), which reuses an answer only while the account's data is unchanged.
 */
export class LeadsService {
  private readonly cache: LeadReadCache;

  constructor(private readonly deps: Deps) {
    this.cache = new LeadReadCache(deps.db.dialect);
  }

  private get db() {
    return this.deps.db.kysely;
  }

  /**
   * `overdue` compares each lead's wait with the account's first-response target at this moment,
   * in working time when the account has working hours (docs/api/automation.md): the cut-off is
   * resolved here, so the query stays pure SQL.
   */
  private async resolved(auth: AuthContext, filters: LeadFilters): Promise<LeadFilters> {
    if (filters.overdue === undefined) return filters;
    const settings = await responseSettingsOf(this.db, auth.accountId);
    return { ...filters, awaitingCutoff: overdueCutoff(settings, this.deps.clock.now()) };
  }

  async list(auth: AuthContext, list: LeadList, query: LeadQuery): Promise<LeadListResult> {
    const { page } = query;
    const filters = await this.resolved(auth, query.filters);
    const scope = await scopeOf(this.db, auth);
    const where = repo.leadConditions(scope, statusTypesOf(list, filters), filters);
    const compiled = repo.countQuery(this.db, where).compile();
    return this.cache.read(this.db, auth.accountId, async (cache) => {
      const [entries, total] = await Promise.all([
        cache.get(queryKey(`page:${page.offset}:${page.limit}`, compiled), (db) => repo.listEntries(db, where, page)),
        cache.get(queryKey('count', compiled), (db) => repo.countLeads(db, where)),
      ]);
      return { entries, total };
    });
  }

  /**
   * Every lead of a list's filters the caller may see, in list order, a page at a time: the CSV
   * export (docs/api/data-ownership.md). Each page is its own query, so the export streams.
   */
  async *pages(auth: AuthContext, list: LeadList, query: LeadQuery['filters'], size = 500): AsyncGenerator<LeadListEntry[]> {
    const filters = await this.resolved(auth, query);
    const scope = await scopeOf(this.db, auth);
    const where = repo.leadConditions(scope, statusTypesOf(list, filters), filters);
    for (let offset = 0; ; offset += size) {
      const entries = await repo.listEntries(this.db, where, { offset, limit: size });
      if (entries.length) yield entries;
      if (entries.length < size) return;
    }
  }

  /**
   * Every status except `ignore` ones (or those of `statuses`), in status order, each with its own
   * page of leads: `offset` and `limit` apply per status. `total` counts the leads of all of them.
   */
  async funnel(auth: AuthContext, query: LeadQuery): Promise<FunnelResult> {
    const { page } = query;
    const filters = await this.resolved(auth, query.filters);
    const scope = await scopeOf(this.db, auth);
    const statuses = (await listStatuses(this.db, auth.accountId))
      .filter((s) => s.type !== 'ignore' && (!filters.statuses || filters.statuses.includes(s.id)))
      .sort(compareStatuses);
    const where = repo.leadConditions(scope, 'any', { ...filters, statuses: statuses.map((s) => s.id) });
    const compiled = repo.countQuery(this.db, where).compile();
    return this.cache.read(this.db, auth.accountId, async (cache) => {
      const [entries, total] = await Promise.all([
        cache.get(queryKey(`funnel:${page.offset}:${page.limit}`, compiled), async (db) =>
          repo.entriesByIds(db, await repo.funnelPageIds(db, where, page)),
        ),
        cache.get(queryKey('count', compiled), (db) => repo.countLeads(db, where)),
      ]);
      return {
        columns: statuses.map((status) => ({ status, entries: entries.filter((e) => e.lead.status_id === status.id) })),
        total,
      };
    });
  }

  /**
   * Counts per list and per status over every status type; new leads per day and the median
   * response time over the `all` list (ignore-status leads only with `ignore=true`).
   * `breakdowns`: also per employee and per channel type. They read the response time of every
   * matching lead (for the medians), so list counts leave them out.
   * `amounts`: also the exact sum of the leads' amounts per list and per status (the funnel
   * board's column totals), from the same grouped query as the counts.
   * `workingTime`: each lead's response time counted within the account's working hours (when it
   * has them), which reads every matching lead's response time as the breakdowns do.
   */
  async statistics(
    auth: AuthContext,
    query: LeadFilters,
    opts: { breakdowns?: boolean; amounts?: boolean; workingTime?: boolean } = {},
  ): Promise<LeadStatistics> {
    const filters = await this.resolved(auth, query);
    const scope = await scopeOf(this.db, auth);
    const everything = repo.leadConditions(scope, 'any', filters);
    const allList = repo.leadConditions(scope, statusTypesOf('all', filters), filters);
    const { targetMinutes: target, hours } = await responseSettingsOf(this.db, auth.accountId);
    const measure = opts.workingTime && hours ? workingMeasure(hours) : undefined;
    const [groups, statuses, days, times, employees, channels] = await Promise.all([
      repo.countByStatus(this.db, everything, { amounts: opts.amounts }),
      listStatuses(this.db, auth.accountId),
      repo.newLeadsPerDay(this.db, allList),
      responseTimes(this.db, allList, target, measure),
      opts.breakdowns ? breakdown(this.db, allList, 'employee', measure) : undefined,
      opts.breakdowns ? breakdown(this.db, allList, 'channel', measure) : undefined,
    ]);
    const perList = <T>(byType: (types: string[]) => T) => ({
      inbox: byType(['inbox']),
      active: byType(['active']),
      completed: byType(['completed', 'failed']),
      all: byType(['inbox', 'active', 'completed', 'failed']),
      ignore: byType(['ignore']),
    });
    const ofTypes = (types: string[]) => groups.filter((g) => types.includes(g.status_type));
    const ofStatus = (id: number) => groups.filter((g) => g.status_id === id);
    const amountOf = (rows: typeof groups) => rows.reduce((sum, g) => sum + (g.amount ?? 0n), 0n);
    return {
      lists: perList((types) => ofTypes(types).reduce((n, g) => n + g.n, 0)),
      ...(opts.amounts ? { amounts: perList((types) => amountOf(ofTypes(types))) } : {}),
      statuses: statuses.sort(compareStatuses).map((status) => ({
        status,
        count: ofStatus(status.id).reduce((n, g) => n + g.n, 0),
        ...(opts.amounts ? { amount: amountOf(ofStatus(status.id)) } : {}),
      })),
      newLeads: days.map((d) => ({ date: new Date(d.day * DAY_MS).toISOString().slice(0, 10), count: d.n })),
      responseTime: times,
      ...(employees && channels
        ? {
            employees: employees.map(({ key, ...rest }) => ({ userId: key === null ? null : Number(key), ...rest })),
            channels: channels.map(({ key, ...rest }) => ({ type: String(key), ...rest })),
          }
        : {}),
    };
  }

  async get(auth: AuthContext, id: number): Promise<LeadRow> {
    return visibleLead(this.db, await scopeOf(this.db, auth), id);
  }

  /**
   * Changes the given fields. `statusId` must be a status of the account (null: back to the
   * inbox), `userId` an employee of the account (null: unassigned), `paymentTypeId` a payment type
   * of the account (null: none); otherwise 400 and nothing changes.
   */
  async update(auth: AuthContext, id: number, input: LeadFieldsInput): Promise<LeadRow> {
    const cols = leadFieldColumns(input);
    return this.change(auth, id, async (trx) => this.resolveReferences(trx, auth.accountId, cols));
  }

  /**
   * Assigns the employee; a lead in the inbox also moves to the first active status (lowest
   * order), or stays in the inbox when the account has no active status.
   */
  async accept(auth: AuthContext, id: number, input: AcceptInput): Promise<LeadRow> {
    if (input.userId !== undefined && input.userID !== undefined && input.userId !== input.userID) {
      throw invalid('userId and userID differ', [{ path: 'body.userId', message: 'differs from userID' }]);
    }
    const userId = input.userId ?? input.userID;
    if (userId === undefined) throw invalid('Invalid request: body.userId is required', [{ path: 'body.userId', message: 'is required' }]);
    return this.change(auth, id, async (trx, lead) => {
      const cols = await this.resolveReferences(trx, auth.accountId, { user_id: userId });
      if (lead.status_type === 'inbox') {
        const first = await firstStatusOfType(trx, auth.accountId, 'active');
        if (first) Object.assign(cols, { status_id: first.id, status_type: 'active' });
      }
      return cols;
    });
  }

  /**
   * Marks incoming messages read: those of the listed channels (type and integration), or every
   * one when `sources` is absent or empty. `read` and the unread count follow.
   */
  async markRead(auth: AuthContext, id: number, sources: ReadSource[] | undefined): Promise<LeadRow> {
    return this.change(auth, id, async (trx, lead) => {
      await repo.markMessagesRead(trx, lead.id, sources?.length ? sources : undefined);
      return { unread_count: await repo.countUnread(trx, lead.id) };
    });
  }

  /**
   * Marks the lead unread again, as a reminder to come back to it: its latest incoming message
   * becomes unread. A lead without incoming messages stays as it is.
   */
  async markUnread(auth: AuthContext, id: number): Promise<LeadRow> {
    return this.change(auth, id, async (trx, lead) => {
      await repo.markLastIncomingUnread(trx, lead.id);
      return { unread_count: await repo.countUnread(trx, lead.id) };
    });
  }

  /** Adds a tag (created on first use); idempotent. Answers the lead's tags. */
  async addTag(auth: AuthContext, id: number, rawTag: string): Promise<string[]> {
    const tag = cleanTag(rawTag);
    return this.changeTags(auth, id, async (trx, lead, now) => {
      const row = await ensureTag(trx, auth.accountId, tag, now);
      return repo.attachTag(trx, auth.accountId, lead.id, row.id, now);
    });
  }

  /** Removes a tag from the lead (the tag stays in the account's list); idempotent. Answers the lead's tags. */
  async removeTag(auth: AuthContext, id: number, rawTag: string): Promise<string[]> {
    const tag = cleanTag(rawTag);
    return this.changeTags(auth, id, async (trx, lead) => {
      const row = await findTag(trx, auth.accountId, tag);
      return row ? repo.detachTag(trx, lead.id, row.id) : false;
    });
  }

  /**
   * Creates a lead for an existing customer (`customerId`) or a new one (`customer`) on an
   * integration the caller may use, without messages. `userId` absent: the calling manager, or
   * nobody when the owner (or an API key) creates it.
   */
  async create(auth: AuthContext, input: NewLeadInput): Promise<LeadRow> {
    if ((input.customerId === undefined) === (input.customer === undefined)) {
      throw invalid('Give exactly one of customerId and customer', [
        { path: 'body.customerId', message: 'exactly one of customerId and customer' },
      ]);
    }
    const { saId, customerId, customer: newCustomer, ...fields } = input;
    const cols = leadFieldColumns(fields);
    const customerPatch = newCustomer ? normalizeCustomerPatch(newCustomer, await defaultCountryOf(this.deps, auth.accountId)) : undefined;
    if (customerPatch && !customerPatch.name) {
      throw invalid('Invalid request: body.customer.name must not be blank', [
        { path: 'body.customer.name', message: 'must not be blank' },
      ]);
    }
    if (cols.user_id === undefined && auth.role === 'manager') cols.user_id = auth.userId;
    const scope = await scopeOf(this.db, auth);
    const now = this.deps.clock.now();
    return this.db.transaction().execute(async (trx) => {
      const integration = await findIntegration(trx, auth.accountId, saId);
      if (!integration || !canUseIntegration(scope, integration.id)) {
        throw invalid(`Unknown integration ${saId}`, [{ path: 'body.saId', message: 'no such integration' }]);
      }
      const resolved = await this.resolveReferences(trx, auth.accountId, cols);
      let customerIdToUse: number;
      if (customerId !== undefined) {
        customerIdToUse = (await this.customerInScope(trx, scope, customerId)).id;
      } else {
        const customer = await insertCustomer(trx, {
          account_id: auth.accountId,
          name: customerPatch?.name ?? '',
          email: customerPatch?.email ?? null,
          phone: customerPatch?.phone ?? null,
          phone_as_typed: customerPatch?.phone_as_typed ?? undefined,
          address: customerPatch?.address ?? null,
          created_at: now,
          updated_at: now,
        });
        customerIdToUse = customer.id;
        await recordEvent(
          trx,
          {
            accountId: auth.accountId,
            type: 'customer.created',
            payload: { customerId: customer.id, customer: customerView(customer, []) },
          },
          now,
        );
      }
      const lead = await repo.insertLead(trx, {
        ...resolved,
        account_id: auth.accountId,
        integration_id: integration.id,
        customer_id: customerIdToUse,
        last_message_at: now,
        created_at: now,
        updated_at: now,
      });
      await recordEvent(
        trx,
        { accountId: auth.accountId, type: 'lead.created', leadId: lead.id, payload: { leadId: lead.id, lead: presentLead(lead) } },
        now,
      );
      return lead;
    });
  }

  /**
   * One change of one visible lead, in one transaction: `compute` returns the columns to set; the
   * events follow from what really changed.
   */
  private async change(
    auth: AuthContext,
    id: number,
    compute: (trx: Executor, lead: LeadRow) => Promise<Updateable<LeadsTable>>,
  ): Promise<LeadRow> {
    const scope = await scopeOf(this.db, auth);
    return this.db.transaction().execute(async (trx) => {
      await repo.lockLead(trx, this.deps.db.dialect, auth.accountId, id);
      const before = await visibleLead(trx, scope, id);
      const cols = await compute(trx, before);
      const now = this.deps.clock.now();
      const changed = Object.entries(cols).some(([k, v]) => (before as unknown as Record<string, unknown>)[k] !== v);
      if (!changed) return before;
      const after = await repo.updateLead(trx, auth.accountId, id, { ...cols, updated_at: now });
      await recordLeadChange(trx, before, after, changedLeadFields(before, after), now);
      return after;
    });
  }

  private async changeTags(
    auth: AuthContext,
    id: number,
    apply: (trx: Executor, lead: LeadRow, now: number) => Promise<boolean>,
  ): Promise<string[]> {
    const scope = await scopeOf(this.db, auth);
    return this.db.transaction().execute(async (trx) => {
      await repo.lockLead(trx, this.deps.db.dialect, auth.accountId, id);
      const lead = await visibleLead(trx, scope, id);
      const now = this.deps.clock.now();
      if (await apply(trx, lead, now)) {
        const after = await repo.updateLead(trx, auth.accountId, id, { updated_at: now });
        await recordLeadChange(trx, lead, after, ['tags'], now);
      }
      return (await repo.tagsOfLeads(trx, [id])).get(id) ?? [];
    });
  }

  /** Checks the referenced status, employee and payment type; the status also sets `status_type`. */
  private async resolveReferences(trx: Executor, accountId: number, cols: Updateable<LeadsTable>): Promise<Updateable<LeadsTable>> {
    const out = { ...cols };
    if (cols.status_id !== undefined) {
      if (cols.status_id === null) out.status_type = 'inbox';
      else {
        const status = await findStatus(trx, accountId, Number(cols.status_id));
        if (!status) throw invalid(`Unknown status ${String(cols.status_id)}`, [{ path: 'body.statusId', message: 'no such status' }]);
        out.status_type = status.type as LeadStatusType;
      }
    }
    if (cols.user_id !== undefined && cols.user_id !== null) {
      if (!(await findUser(trx, accountId, Number(cols.user_id)))) {
        throw invalid(`Unknown employee ${String(cols.user_id)}`, [{ path: 'body.userId', message: 'no such employee' }]);
      }
    }
    if (cols.payment_type_id !== undefined && cols.payment_type_id !== null) {
      if (!(await findPaymentType(trx, accountId, Number(cols.payment_type_id)))) {
        throw invalid(`Unknown payment type ${String(cols.payment_type_id)}`, [
          { path: 'body.paymentTypeId', message: 'no such payment type' },
        ]);
      }
    }
    return out;
  }

  private async customerInScope(trx: Executor, scope: Scope, customerId: number) {
    try {
      return await visibleCustomer(trx, scope, customerId);
    } catch (err) {
      if (err instanceof AppError && err.statusCode === 404) {
        throw invalid(`Unknown customer ${customerId}`, [{ path: 'body.customerId', message: 'no such customer' }]);
      }
      throw err;
    }
  }
}

function cleanTag(raw: string): string {
  const tag = raw.trim();
  if (!tag) throw invalid('Invalid request: tag must not be blank', [{ path: 'params.tag', message: 'must not be blank' }]);
  if (tag.length > TAG_MAX)
    throw invalid(`Invalid request: tag must be at most ${TAG_MAX} characters`, [{ path: 'params.tag', message: 'is too long' }]);
  return tag;
}
