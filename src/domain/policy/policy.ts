import { sql, type RawBuilder, type SqlBool } from 'kysely';
import { lookupsById } from '../../db/batch-queue.js';
import { dialectOf, type Executor } from '../../db/database.js';
import { prepared } from '../../db/prepared.js';
import type { CustomerRow, LeadRow } from '../../db/schema.js';
import type { AuthContext } from '../auth/auth-context.js';
import { AppError, forbidden, notFound } from '../errors.js';

/**
 * Access rules in one place (docs/api/auth.md). Every route that reads or changes account data asks
 * here: owner-only operations, which integrations an employee reaches, which leads it sees. Ids of
 * other accounts, and leads an employee may not see, are "not found", never "forbidden".
 */

export function requireOwner(auth: AuthContext): void {
  if (auth.role !== 'owner') throw forbidden('Only the account owner may do this');
  requireScope(auth, 'admin');
}

/**
 * OAuth 2 scopes (docs/api/oauth.md): `read` for every GET, `write` for every other request, and
 * `admin` besides for owner-only operations (grantable only by an owner). A token acts as its
 * employee, so these only narrow that employee's rights. Other tokens carry no scopes.
 */
export const OAUTH_SCOPES = ['read', 'write', 'admin'] as const;
export type OAuthScope = (typeof OAUTH_SCOPES)[number];

export function requireScope(auth: AuthContext, needed: OAuthScope): void {
  if (auth.scopes && !auth.scopes.includes(needed)) {
    throw new AppError(403, 'insufficient_scope', `This token lacks the "${needed}" scope`);
  }
}

/** The scope a request needs by its method (the auth hook asks before the handler runs). */
export function requireScopeForMethod(auth: AuthContext, method: string): void {
  requireScope(auth, method === 'GET' || method === 'HEAD' ? 'read' : 'write');
}

/** Operations only a person signed in to Parley may do (not API keys, plugins or OAuth apps): managing credentials. */
export function requireInteractive(auth: AuthContext): void {
  if (auth.typ !== 'access') throw forbidden('Only a signed-in session may do this');
}

/**
 * What an employee reaches. `integrations`: 'all', or the ids it may use (possibly none).
 * `leads`: 'all' within those integrations, or its own, the unassigned inbox and `allowedUsers`'.
 */
export interface Scope {
  accountId: number;
  integrations: 'all' | number[];
  leads: 'all' | { self: number; allowedUsers: number[] };
}

const sourcesOfUser = prepared((db, p: { accountId: number; userId: number }) =>
  db.selectFrom('user_sources').select('sa_id').where('user_id', '=', p.userId).where('account_id', '=', p.accountId),
);

/** Read on every request of a manager: the scope follows changes to the employee at once. */
export async function scopeOf(db: Executor, auth: AuthContext): Promise<Scope> {
  if (auth.role === 'owner') return { accountId: auth.accountId, integrations: 'all', leads: 'all' };
  const records = await sourcesOfUser(db, { accountId: auth.accountId, userId: auth.userId });
  const integrations: Scope['integrations'] = records.length === 0 ? 'all' : records.flatMap((r) => (r.sa_id === null ? [] : [r.sa_id]));
  const leads: Scope['leads'] = auth.user.allow_all_deals
    ? 'all'
    : { self: auth.userId, allowedUsers: parseIdList(auth.user.allowed_users) };
  return { accountId: auth.accountId, integrations, leads };
}

export function canUseIntegration(scope: Scope, integrationId: number): boolean {
  return scope.integrations === 'all' || scope.integrations.includes(integrationId);
}

/** The visibility rule as SQL over a `leads` table reference; null when nothing is hidden. */
export function leadScopeSql(scope: Scope, alias = 'leads'): RawBuilder<SqlBool> | null {
  const parts: RawBuilder<unknown>[] = [];
  const col = (name: string) => sql.ref(`${alias}.${name}`);
  if (scope.integrations !== 'all') {
    parts.push(scope.integrations.length ? sql`${col('integration_id')} in (${sql.join(scope.integrations)})` : sql`1 = 0`);
  }
  if (scope.leads !== 'all') {
    const { self, allowedUsers } = scope.leads;
    const mine = [self, ...allowedUsers];
    parts.push(sql`(${col('user_id')} in (${sql.join(mine)}) or (${col('user_id')} is null and ${col('status_type')} = 'inbox'))`);
  }
  if (!parts.length) return null;
  return sql<SqlBool>`(${sql.join(parts, sql` and `)})`;
}

/** In-memory form of the same rule, for rows already loaded (events to the realtime stream). */
export function canSeeLeadRow(scope: Scope, lead: Pick<LeadRow, 'account_id' | 'integration_id' | 'user_id' | 'status_type'>): boolean {
  if (lead.account_id !== scope.accountId) return false;
  if (!canUseIntegration(scope, lead.integration_id)) return false;
  if (scope.leads === 'all') return true;
  if (lead.user_id === null) return lead.status_type === 'inbox';
  return lead.user_id === scope.leads.self || scope.leads.allowedUsers.includes(lead.user_id);
}

const leadOfAccount = prepared((db, p: { accountId: number; leadId: number }) =>
  db.selectFrom('leads').selectAll().where('id', '=', p.leadId).where('account_id', '=', p.accountId),
);

/** PostgreSQL: the leads of several ids at once (see `leadById`). */
const leadsByIds = prepared((db, p: { ids: number[] }) =>
  db.selectFrom('leads').selectAll().where(sql<boolean>`id = any(${p.ids}::bigint[])`),
);

/**
 * PostgreSQL, outside a transaction: the lead look-ups of one turn of the event loop in one
 * statement instead of one each (docs/performance.md), as the widget's
 * session look-ups are. A single-lead read was one round trip per request, which costs the server
 * twice what SQLite's in-process read does. The batch starts after its callers asked, so it sees
 * every change committed before; who may see the lead is checked in memory by the same rule
 * (`canSeeLeadRow`), and each caller gets its own copy of the row.
 */
const leadById = lookupsById((db, ids) => leadsByIds(db, { ids }));

/** The lead, when it exists in the scope's account and the scope may see it; otherwise 404. */
export async function visibleLead(db: Executor, scope: Scope, leadId: number): Promise<LeadRow> {
  const lead = await findVisibleLead(db, scope, leadId);
  if (!lead) throw notFound('Lead not found');
  return lead;
}

/** The lead, when it exists in the scope's account and the scope may see it. */
export async function findVisibleLead(db: Executor, scope: Scope, leadId: number): Promise<LeadRow | undefined> {
  if (dialectOf(db) === 'postgres' && !db.isTransaction) {
    const lead = await leadById(db, leadId);
    return lead && canSeeLeadRow(scope, lead) ? { ...lead } : undefined;
  }
  const rule = leadScopeSql(scope);
  // Unrestricted scopes (the owner, API keys) run a query compiled once; a rule's SQL varies with the scope.
  return rule
    ? db.selectFrom('leads').selectAll().where('id', '=', leadId).where('account_id', '=', scope.accountId).where(rule).executeTakeFirst()
    : (await leadOfAccount(db, { accountId: scope.accountId, leadId }))[0];
}

/**
 * The customer, when it exists in the scope's account and the scope sees at least one of its leads
 * (an unrestricted scope sees every customer of the account); otherwise 404.
 */
export async function visibleCustomer(db: Executor, scope: Scope, customerId: number): Promise<CustomerRow> {
  const customer = (await visibleCustomers(db, scope, [customerId]))[0];
  if (!customer) throw notFound('Customer not found');
  return customer;
}

/** The customers among `ids` that {@link visibleCustomer} would answer, in one query; the others are left out. */
export async function visibleCustomers(db: Executor, scope: Scope, ids: number[]): Promise<CustomerRow[]> {
  if (!ids.length) return [];
  let query = db.selectFrom('customers').selectAll().where('id', 'in', ids).where('account_id', '=', scope.accountId);
  const rule = leadScopeSql(scope);
  if (rule) {
    query = query.where((eb) =>
      eb.exists(
        eb
          .selectFrom('leads')
          .select('leads.id')
          .whereRef('leads.customer_id', '=', 'customers.id')
          .where('leads.account_id', '=', scope.accountId)
          .where(rule),
      ),
    );
  }
  return query.execute();
}

export function parseIdList(json: string | null): number[] {
  if (!json) return [];
  const parsed: unknown = JSON.parse(json);
  return Array.isArray(parsed) ? parsed.filter((v): v is number => Number.isInteger(v)) : [];
}
