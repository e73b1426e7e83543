import { afterAll, beforeAll, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createHarness, type Harness, type SignedUp } from '../test/helpers/harness.js';
import { createLead, createManager, type ManagerFixture } from '../test/helpers/fixtures.js';
import { connectWidget } from '../test/widget-support.js';
import { operationsOf, sample, type OpenApiOperation } from './fuzz-cases.js';
import { figure, FULL, rng, SEED } from './support.js';

/**
 * Two accounts, two roles: the owner and a restricted manager of account B ask every route that
 * takes an id (in the path, the query or the body) with the ids of account A's rows. A path id
 * must answer 403 or 404 (or the 400 a nonexistent id gets, when the request was refused before
 * any lookup); a query or body id must answer exactly as an id of nothing does. No answer may
 * carry A's data (every text of A holds the marker), and A's rows must be unchanged at the end.
 */
const MARKER = 'zqxmark';
const NOWHERE = 999_999_937;
/** Tables whose rows belong to an account (`account_id`) and have integer ids. */
const TABLES = [
  'users',
  'api_keys',
  'integrations',
  'statuses',
  'payment_types',
  'tags',
  'template_groups',
  'templates',
  'customers',
  'profiles',
  'sources',
  'leads',
  'messages',
  'plugins',
  'webhooks',
  'deliveries',
  'events',
  'invitations',
] as const;
const ID_FIELD = /^(id|ids|said|saId|customer|manager|realId)$|Ids?$/;
/** Routes that take no employee token: capability URLs and provider webhooks are tested elsewhere. */
const PUBLIC = /^\/(widget\/v1|channels|files)\//;

let h: Harness;
let b: { owner: SignedUp; manager: ManagerFixture; lead: number; integration: number; customer: number };
let aId: SignedUp;
const aIds = new Map<string, number[]>();

/** Moves every id sequence far past B's rows, so no id of A's is also an id of B's, of any kind. */
async function separateIdSpaces(): Promise<void> {
  const db = h.database.db.kysely;
  for (const [i, table] of TABLES.entries()) {
    const start = 1_000_000_000 + i * 1_000_000;
    if (h.database.db.dialect === 'postgres') {
      await sql`alter table ${sql.id(table)} alter column id restart with ${sql.lit(start)}`.execute(db);
    } else {
      // AUTOINCREMENT tables keep their counter in sqlite_sequence (a row once the table had one).
      const moved = await sql`update sqlite_sequence set seq = ${start} where name = ${table}`.execute(db);
      if (!Number(moved.numAffectedRows)) await sql`insert into sqlite_sequence(name, seq) values (${table}, ${start})`.execute(db);
    }
  }
}

async function seedVictim(): Promise<SignedUp> {
  const owner = await h.signUp(`${MARKER}-owner@example.com`, 'victim password 1', `${MARKER} Owner`);
  const call = async (method: 'POST' | 'PUT', url: string, payload: unknown) => {
    const res = await h.request({ method, url, token: owner.access, payload: payload as object });
    if (res.statusCode !== 200) throw new Error(`seeding ${url}: ${res.statusCode} ${res.body}`);
    return res.json();
  };
  const widget = await connectWidget(h, owner, { title: `${MARKER} widget` });
  const lead = await createLead(h, owner.accountId, widget.id, { customerName: `${MARKER} customer` });
  await createManager(h, owner);
  await call('POST', '/v1.3/payment-types', { title: `${MARKER} pay` });
  const group = await call('POST', '/v1.3/templates', { key: `${MARKER}-group` });
  await call('POST', `/v1.3/templates/${group.id}`, { template: `${MARKER} phrase` });
  await call('POST', '/v1.3/plugins', { type: `${MARKER}-plugin`, name: `${MARKER} plugin` });
  await call('POST', '/v1.3/webhooks', { url: `http://127.0.0.1:9/${MARKER}` });
  await call('POST', '/v1.3/account/me/api-keys', { name: `${MARKER} key` });
  await call('POST', `/v1.3/tags/${lead.leadId}/${MARKER}`, {});
  const session = await h.request({ method: 'POST', url: '/widget/v1/sessions', payload: { key: widget.key } });
  const say = await h.request({
    method: 'POST',
    url: '/widget/v1/messages',
    headers: { authorization: `Bearer ${session.json().token}` },
    payload: { clientId: 'seed', text: `${MARKER} hello` },
  });
  if (say.statusCode !== 200) throw new Error(`seeding a message: ${say.body}`);
  return owner;
}

/** A's rows, whole: compared before and after the probes. */
async function victimRows(): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const table of TABLES) {
    out[table] = (
      await sql`select * from ${sql.id(table)} where account_id = ${aId.accountId} order by id`
        .execute(h.database.db.kysely)
        .catch(() => ({ rows: [] }))
    ).rows;
  }
  return out;
}

beforeAll(async () => {
  h = await createHarness({
    env: { PARLEY_API_RATE_LIMIT: '0', PARLEY_WEBHOOK_ALLOW_PRIVATE: '1', PARLEY_WIDGET_SESSIONS_PER_IP: '100000' },
  });
  const bOwner = await h.signUp();
  const bWidget = await connectWidget(h, bOwner);
  const bLead = await createLead(h, bOwner.accountId, bWidget.id);
  b = {
    owner: bOwner,
    manager: await createManager(h, bOwner, { sources: [null] }),
    lead: bLead.leadId,
    integration: bWidget.id,
    customer: bLead.customerId,
  };
  await separateIdSpaces();
  aId = await seedVictim();
  for (const table of TABLES) {
    // Tables without account_id (their rows hang off an account's row) are reached through it.
    const rows = (
      await sql<{ id: number }>`select id from ${sql.id(table)} where account_id = ${aId.accountId}`
        .execute(h.database.db.kysely)
        .catch(() => ({ rows: [] as Array<{ id: number }> }))
    ).rows;
    aIds.set(
      table,
      rows.map((r) => Number(r.id)),
    );
  }
});
afterAll(() => h?.close());

/** B's own row for a path, so that a query or body id is what the request turns on. */
function ownPathId(op: OpenApiOperation): number {
  const area = op.path.split('/')[2];
  if (area === 'integrations' || area === 'search') return b.integration;
  if (area === 'customers') return b.customer;
  if (area === 'managers') return b.manager.userId;
  return b.lead;
}

it("never answers account B's employees with account A's rows", async () => {
  const before = await victimRows();
  const doc = h.app.swagger() as unknown as { paths: Record<string, Record<string, unknown>> };
  const ops = operationsOf(doc).filter((op) => !PUBLIC.test(op.path) && op.path !== '/v1.3/auth/sessions');
  const ids = [...aIds.entries()].flatMap(([table, list]) => list.map((id) => ({ table, id })));
  const random = rng(SEED);
  const pick = <T>(list: T[], n: number) => (FULL ? list : list.filter(() => random() < n / list.length));
  const leaks: string[] = [];
  let probes = 0;
  let routes = 0;
  const ask = (op: OpenApiOperation, token: string, pathId: number, query: string, body: unknown) =>
    h.request({
      method: op.method as 'GET',
      url: op.path.replace(/\{[^}]+\}/g, String(pathId)) + (query ? `?${query}` : ''),
      token,
      ...(body === undefined ? {} : { payload: body as object }),
    });
  const judge = (label: string, res: { statusCode: number; body: string }, allowed: (s: number) => boolean) => {
    probes++;
    if (!allowed(res.statusCode) || res.body.toLowerCase().includes(MARKER))
      leaks.push(`${label} -> ${res.statusCode} ${res.body.slice(0, 160)}`);
  };

  for (const op of ops) {
    const idFields = [
      ...op.queryParams.filter((p) => ID_FIELD.test(p.name)).map((p) => ({ in: 'query' as const, name: p.name })),
      ...Object.keys(op.body?.properties ?? {})
        .filter((n) => ID_FIELD.test(n))
        .map((n) => ({ in: 'body' as const, name: n })),
    ];
    if (!op.pathParams.length && !idFields.length) continue;
    routes++;
    const body = op.body ? (sample(op.body) as Record<string, unknown>) : undefined;
    for (const actor of ['owner', 'manager'] as const) {
      const token = actor === 'owner' ? b.owner.access : b.manager.access;
      if (op.pathParams.length) {
        const nowhere = await ask(op, token, NOWHERE, '', body);
        for (const { table, id } of pick(ids, 3)) {
          const res = await ask(op, token, id, '', body);
          judge(
            `${actor} ${op.method} ${op.path} path=${table}:${id}`,
            res,
            (s) => s === 403 || s === 404 || (s === 400 && nowhere.statusCode === 400),
          );
        }
      }
      for (const field of idFields) {
        const probe = async (value: number) => {
          const asArray = field.in === 'body' && /s$/.test(field.name);
          const v = asArray ? [value] : value;
          const query = field.in === 'query' ? `${encodeURIComponent(field.name)}=${value}` : '';
          return ask(op, token, ownPathId(op), query, field.in === 'body' ? { ...body, [field.name]: v } : body);
        };
        const nowhere = await probe(NOWHERE);
        for (const { table, id } of pick(ids, 3)) {
          const res = await probe(id);
          const same = res.statusCode === nowhere.statusCode;
          judge(
            `${actor} ${op.method} ${op.path} ${field.in}.${field.name}=${table}:${id} (nowhere: ${nowhere.statusCode})`,
            res,
            () => same,
          );
        }
      }
    }
  }
  figure('tenancy', 'victim rows', ids.length);
  figure('tenancy', 'routes probed', routes);
  figure('tenancy', 'requests', probes);
  figure('tenancy', 'leaks', leaks.length);
  expect(leaks, leaks.slice(0, 20).join('\n')).toEqual([]);
  expect(await victimRows()).toEqual(before);
  expect(routes).toBeGreaterThan(50);
  // The victim's ids are all past B's (separateIdSpaces): a collision would be a false alarm or a miss.
  expect(ids.filter(({ id }) => id < 1_000_000_000)).toEqual([]);
});
