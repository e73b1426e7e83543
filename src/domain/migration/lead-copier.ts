import { insertCustomer } from '../customers/customers.repo.js';
import { count, orSkip, pool, skip, transact, type MigrationContext } from './migration-context.js';
import * as repo from './migration.repo.js';
import { ensureTag } from './reference-copier.js';
import { InterruptedError, SourceError } from './source-client.js';
import { SchemaError, list, readCustomer, readLead, type SrcCustomer, type SrcLead } from './source-records.js';

/**
 * Customers and leads (docs/migrate.md): every lead of every list, read page by page; each
 * customer once, with its profiles; each lead with all its fields and tags. A lead copied by an
 * earlier run gets the source's current fields (status, responsible, amount, ...).
 */

const PAGE = 200;
const LISTS = ['all', 'inbox', 'active', 'completed'] as const;

/** Every lead of the source, once each; with `since`, those whose last message is not older. */
export async function readLeads(ctx: MigrationContext): Promise<SrcLead[]> {
  const seen = new Map<string, SrcLead>();
  let version = 'v1.3';
  for (const name of LISTS) {
    for (let offset = 0; ; offset += PAGE) {
      const path = (v: string) => `/${v}/leads/${name}?offset=${offset}&limit=${PAGE}${name === 'all' ? '&ignore=true' : ''}`;
      let answer = await ctx.client.request('GET', path(version));
      if (answer.status === 404 && version === 'v1.3') {
        version = 'v1.2';
        answer = await ctx.client.request('GET', path(version));
      }
      if (answer.status !== 200) throw new SourceError(`GET ${path(version)}: the source answered ${answer.status}`, answer.status);
      const items = list(answer.body, `the ${name} list`);
      items.forEach((item, i) => {
        try {
          const lead = readLead(item);
          if (ctx.since !== undefined && lead.lastMessageAt !== undefined && lead.lastMessageAt < ctx.since) return;
          seen.set(lead.id, lead);
        } catch (err) {
          if (!(err instanceof SchemaError)) throw err;
          skip(ctx.report, 'lead', `${name} #${offset + i + 1}`, err.message);
        }
      });
      const total = Number(answer.headers.get('x-total-count'));
      ctx.progress(`leads: ${name} list`, offset + items.length, Number.isFinite(total) && total > 0 ? total : offset + items.length);
      if (items.length < PAGE || ctx.signal?.aborted) break;
    }
  }
  return [...seen.values()];
}

export async function copyCustomers(ctx: MigrationContext, leads: SrcLead[]): Promise<void> {
  const byCustomer = new Map<string, SrcLead[]>();
  for (const l of leads) byCustomer.set(l.customerId, [...(byCustomer.get(l.customerId) ?? []), l]);
  const integrations = await ctx.db.selectFrom('integrations').select(['id', 'type']).where('account_id', '=', ctx.accountId).execute();
  const typeOf = new Map(integrations.map((i) => [i.id, i.type]));
  const todo = [...byCustomer.keys()].filter((id) => {
    const known = ctx.ids.get('customer', id) !== undefined;
    if (known) count(ctx.report, 'customers', false);
    return !known;
  });
  let done = 0;
  await pool(todo, ctx.concurrency, ctx.signal, async (id) => {
    const leadsOf = byCustomer.get(id) ?? [];
    const customer = await fetchCustomer(ctx, id, leadsOf[0]);
    ctx.progress('customers', ++done, todo.length);
    if (!customer) return;
    count(ctx.report, 'customers');
    if (ctx.dryRun) return;
    const leadIntegrations = leadsOf.map((l) => ctx.ids.num('integration', l.integrationId));
    const stored = await orSkip(ctx, 'customer', id, () =>
      transact(ctx, async (trx, map) => {
        const now = ctx.now();
        const row = await insertCustomer(trx, {
          account_id: ctx.accountId,
          name: customer.name,
          login: customer.login,
          avatar: customer.avatar,
          email: customer.email,
          phone: customer.phone,
          address: customer.address,
          created_at: now,
          updated_at: now,
        });
        map('customer', id, row.id);
        for (const p of customer.profiles) {
          // A profile names its type only: the integration of its customer's leads with that type.
          const integrationId =
            leadIntegrations.find((i) => i !== undefined && typeOf.get(i) === p.type) ?? integrations.find((i) => i.type === p.type)?.id;
          if (integrationId === undefined) {
            skip(ctx.report, 'profile', p.id, `no copied integration of type ${p.type}`);
            continue;
          }
          const profile = await trx
            .insertInto('profiles')
            .values({
              account_id: ctx.accountId,
              customer_id: row.id,
              integration_id: integrationId,
              type: p.type,
              social_id: p.socialId,
              login: p.login,
              profile_url: p.profileUrl,
              avatar: customer.avatar,
              name: customer.name,
              created_at: now,
            })
            .returning('id')
            .executeTakeFirstOrThrow();
          map('profile', p.id, profile.id);
        }
      }),
    );
    if (!stored) return;
    count(ctx.report, 'profiles', true, customer.profiles.length);
  });
}

async function fetchCustomer(ctx: MigrationContext, id: string, lead: SrcLead): Promise<SrcCustomer | undefined> {
  try {
    const answer = await ctx.client.request('GET', `/v1.3/customers/${encodeURIComponent(id)}`);
    if (answer.status === 200) return readCustomer(answer.body);
    throw new SourceError(`GET /v1.3/customers/${id}: the source answered ${answer.status}`, answer.status);
  } catch (err) {
    if (err instanceof InterruptedError) throw err;
    if (!(err instanceof SchemaError || err instanceof SourceError)) throw err;
    skip(ctx.report, 'customer', id, `${err.message}; copied from the lead list without profiles`);
  }
  // What the lead list says of the customer.
  return { id, ...lead.customer, email: null, phone: null, address: null, profiles: [] };
}

/** Inserts new leads and brings copied ones up to date; answers source lead id -> our id for the history phase. */
export async function copyLeads(
  ctx: MigrationContext,
  leads: SrcLead[],
  statusTypes: Map<string, string>,
  tags: Map<string, number>,
): Promise<void> {
  let done = 0;
  for (const l of leads) {
    if (ctx.signal?.aborted) return;
    ctx.progress('leads', ++done, leads.length);
    const known = ctx.ids.num('lead', l.id);
    const integrationId = ctx.ids.num('integration', l.integrationId);
    const customerId = ctx.ids.num('customer', l.customerId);
    if (integrationId === undefined || customerId === undefined) {
      if (ctx.dryRun) count(ctx.report, 'leads');
      else skip(ctx.report, 'lead', l.id, integrationId === undefined ? 'its integration was not copied' : 'its customer was not copied');
      continue;
    }
    count(ctx.report, 'leads', known === undefined);
    const tagIds: number[] = [];
    for (const tag of l.tags) {
      const id = await ensureTag(ctx, tags, tag);
      if (id !== undefined) tagIds.push(id);
    }
    if (ctx.dryRun) continue;
    const statusId = ctx.ids.num('status', l.statusId);
    if (l.statusId !== null && statusId === undefined)
      skip(ctx.report, 'lead status', l.id, `status ${l.statusId} was not copied: the lead is in the inbox`);
    const fields = {
      user_id: ctx.ids.num('employee', l.userId) ?? null,
      status_id: statusId ?? null,
      status_type: (statusId === undefined || l.statusId === null ? 'inbox' : (statusTypes.get(l.statusId) ?? 'active')) as 'inbox',
      details: l.details,
      amount: l.amount,
      address: l.address,
      ttn: l.ttn,
      custom_data: l.customData,
      custom_fields: l.customFields,
      payment_type_id: ctx.ids.num('payment_type', l.paymentTypeId) ?? null,
      items: l.items,
      response_time: l.responseTime,
    };
    await orSkip(ctx, 'lead', l.id, () =>
      transact(ctx, async (trx, map) => {
        let leadId = known;
        if (leadId === undefined) {
          const created = l.createdAt ?? l.lastMessageAt ?? ctx.now();
          const row = await trx
            .insertInto('leads')
            .values({
              account_id: ctx.accountId,
              integration_id: integrationId,
              customer_id: customerId,
              ...fields,
              unread_count: l.unread,
              last_message_at: l.lastMessageAt ?? created,
              created_at: created,
              updated_at: ctx.now(),
            })
            .returning('id')
            .executeTakeFirstOrThrow();
          leadId = row.id;
          map('lead', l.id, leadId);
        } else {
          await trx
            .updateTable('leads')
            .set({ ...fields, unread_count: l.unread })
            .where('id', '=', leadId)
            .where('account_id', '=', ctx.accountId)
            .execute();
        }
        await repo.replaceLeadTags(trx, ctx.accountId, leadId, tagIds, ctx.now());
      }),
    );
  }
}
