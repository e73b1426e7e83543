import { insertCustomer } from '../customers/customers.repo.js';
import { BULK, bulkRead, chunks, type BulkState } from './bulk-reads.js';
import { Batcher, count, pool, present, skip, writeBatch, type MigrationContext } from './migration-context.js';
import * as repo from './migration.repo.js';
import { ensureTag } from './reference-copier.js';
import { InterruptedError, SourceError } from './source-client.js';
import { SchemaError, list, readCustomer, readLead, type SrcCustomer, type SrcLead } from './source-records.js';
import { groupBy } from '../group-by.js';

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
  const state = { version: 'v1.3' };
  for (const name of LISTS) {
    for (const [offset, items] of await readList(ctx, name, state)) {
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
    }
    if (ctx.signal?.aborted) break;
  }
  return [...seen.values()];
}

/**
 * The pages of one list in order, as [offset, items]: the first page says how many there are
 * (`X-Total-Count`), the rest are read side by side; pages past that count (leads that arrived
 * meanwhile) follow one by one until one is not full.
 */
async function readList(
  ctx: MigrationContext,
  name: (typeof LISTS)[number],
  state: { version: string },
): Promise<Array<[number, unknown[]]>> {
  let read = 0;
  const page = async (offset: number) => {
    const path = (v: string) => `/${v}/leads/${name}?offset=${offset}&limit=${PAGE}${name === 'all' ? '&ignore=true' : ''}`;
    let answer = await ctx.client.request('GET', path(state.version));
    if (answer.status === 404 && state.version === 'v1.3') {
      state.version = 'v1.2';
      answer = await ctx.client.request('GET', path(state.version));
    }
    if (answer.status !== 200) throw new SourceError(`GET ${path(state.version)}: the source answered ${answer.status}`, answer.status);
    const items = list(answer.body, `the ${name} list`);
    const total = Number(answer.headers.get('x-total-count'));
    read += items.length;
    ctx.progress(`leads: ${name} list`, read, Number.isFinite(total) && total > read ? total : read);
    return { items, total: Number.isFinite(total) ? total : 0 };
  };
  const first = await page(0);
  const pages: Array<[number, unknown[]]> = [[0, first.items]];
  if (first.items.length < PAGE) return pages;
  const offsets: number[] = [];
  for (let offset = PAGE; offset < first.total; offset += PAGE) offsets.push(offset);
  const got = new Map<number, unknown[]>();
  await pool(offsets, ctx.concurrency, ctx.signal, async (offset) => void got.set(offset, (await page(offset)).items));
  if (ctx.signal?.aborted) return pages;
  for (const offset of offsets) pages.push([offset, got.get(offset) ?? []]);
  for (let [offset, items] = pages[pages.length - 1] ?? [0, []]; items.length === PAGE && !ctx.signal?.aborted; ) {
    offset += PAGE;
    items = (await page(offset)).items;
    pages.push([offset, items]);
  }
  return pages;
}

/** Customers written per transaction. */
const CUSTOMER_BATCH = 200;

export async function copyCustomers(ctx: MigrationContext, leads: SrcLead[]): Promise<void> {
  const byCustomer = groupBy(leads, (l) => l.customerId);
  const integrations = await ctx.db.selectFrom('integrations').select(['id', 'type']).where('account_id', '=', ctx.accountId).execute();
  const typeOf = new Map(integrations.map((i) => [i.id, i.type]));
  const todo = [...byCustomer.keys()].filter((id) => {
    const known = ctx.ids.get('customer', id) !== undefined;
    if (known) count(ctx.report, 'customers', false);
    return !known;
  });
  type Fetched = { customer: SrcCustomer; profiles: Array<{ p: SrcCustomer['profiles'][number]; integrationId: number }> };
  // Read side by side; written a batch per transaction while the next ones are read.
  const batcher = new Batcher<Fetched>(CUSTOMER_BATCH, async (batch) => {
    const stored = await writeBatch(
      ctx,
      batch,
      'customer',
      (f) => f.customer.id,
      async (trx, map, items) => {
        const now = ctx.now();
        for (const { customer, profiles } of items) {
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
          map('customer', customer.id, row.id);
          for (const { p, integrationId } of profiles) {
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
        }
      },
    );
    for (const f of stored) count(ctx.report, 'profiles', true, f.profiles.length);
  });
  let done = 0;
  const bulk: BulkState = { on: true };
  try {
    // A page of customers at a time, the next read while this one is written (bulk-reads.ts).
    await pool(chunks(todo, BULK), 2, ctx.signal, async (ids) => {
      const got = await bulkRead(ctx, bulk, '/v1.3/customers', 'id', ids, (item) => item.id);
      // Those the bulk answer lacks are read alone, twice as many as requests in flight: one waiting
      // for a write leaves the client busy.
      await pool(ids, 2 * ctx.concurrency, ctx.signal, (id) => copyCustomer(id, got.get(id)));
    });
  } finally {
    // What was read is written, an interrupted run included.
    await batcher.flush();
  }

  async function copyCustomer(id: string, listed: unknown): Promise<void> {
    const leadsOf = byCustomer.get(id) ?? [];
    const lead = present({ get: (i: number) => leadsOf[i] }, 0, `lead of customer ${id}`);
    const customer = (listed !== undefined ? readOrUndefined(listed) : undefined) ?? (await fetchCustomer(ctx, id, lead));
    ctx.progress('customers', ++done, todo.length);
    count(ctx.report, 'customers');
    if (ctx.dryRun) return;
    const leadIntegrations = leadsOf.map((l) => ctx.ids.num('integration', l.integrationId));
    const profiles: Fetched['profiles'] = [];
    for (const p of customer.profiles) {
      // A profile names its type only: the integration of its customer's leads with that type.
      const integrationId =
        leadIntegrations.find((i) => i !== undefined && typeOf.get(i) === p.type) ?? integrations.find((i) => i.type === p.type)?.id;
      if (integrationId === undefined) skip(ctx.report, 'profile', p.id, `no copied integration of type ${p.type}`);
      else profiles.push({ p, integrationId });
    }
    await batcher.add({ customer, profiles });
  }
}

/** A customer of a bulk answer; undefined when it breaks its schema (it is then read alone). */
function readOrUndefined(item: unknown): SrcCustomer | undefined {
  try {
    return readCustomer(item);
  } catch (err) {
    if (err instanceof SchemaError) return undefined;
    throw err;
  }
}

async function fetchCustomer(ctx: MigrationContext, id: string, lead: SrcLead): Promise<SrcCustomer> {
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

/** Leads written per transaction. */
const LEAD_BATCH = 200;

type LeadWrite = { l: SrcLead; known: number | undefined; integrationId: number; customerId: number; tagIds: number[]; fields: LeadFields };
type LeadFields = ReturnType<typeof leadFields>;

/** Inserts new leads and brings copied ones up to date, a batch per transaction. */
export async function copyLeads(
  ctx: MigrationContext,
  leads: SrcLead[],
  statusTypes: Map<string, string>,
  tags: Map<string, number>,
): Promise<void> {
  let done = 0;
  let batch: LeadWrite[] = [];
  for (const l of leads) {
    if (ctx.signal?.aborted) break;
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
    batch.push({ l, known, integrationId, customerId, tagIds, fields: leadFields(ctx, l, statusId, statusTypes) });
    if (batch.length >= LEAD_BATCH) {
      await writeLeads(ctx, batch);
      batch = [];
    }
  }
  await writeLeads(ctx, batch);
}

function leadFields(ctx: MigrationContext, l: SrcLead, statusId: number | undefined, statusTypes: Map<string, string>) {
  return {
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
}

async function writeLeads(ctx: MigrationContext, batch: LeadWrite[]): Promise<void> {
  await writeBatch(
    ctx,
    batch,
    'lead',
    (w) => w.l.id,
    async (trx, map, items) => {
      const now = ctx.now();
      const leadIds = new Map<string, number>();
      for (const { l, known, integrationId, customerId, fields } of items) {
        if (known !== undefined) {
          await trx
            .updateTable('leads')
            .set({ ...fields, unread_count: l.unread })
            .where('id', '=', known)
            .where('account_id', '=', ctx.accountId)
            .execute();
          continue;
        }
        const created = l.createdAt ?? l.lastMessageAt ?? now;
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
            updated_at: now,
          })
          .returning('id')
          .executeTakeFirstOrThrow();
        map('lead', l.id, row.id);
        leadIds.set(l.id, row.id);
      }
      // The batch's tags at once: one delete, one insert.
      await repo.replaceLeadTags(
        trx,
        ctx.accountId,
        items.map((w) => ({ leadId: w.known ?? present(leadIds, w.l.id, 'lead'), tagIds: w.tagIds })),
        now,
      );
    },
  );
}
