import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli.js';
import { migrateAccount, type MigrateOptions } from '../src/domain/migration/account-migrator.js';
import type { MigrationReport } from '../src/domain/migration/migration-context.js';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { proxy, seedSource, serve } from './helpers/migration-source.js';

// The source is a second Parley serving its API over real HTTP on loopback; each target is a
// Parley installation of its own (its own database) that `parley migrate` writes into.
const LEADS = 500;
const PER_LEAD = 10;

let source: Harness;
let sourceUrl: string;
let owner: SignedUp;
let seeded: Awaited<ReturnType<typeof seedSource>>;
const targets: Harness[] = [];
const servers: Array<{ close(): Promise<void> }> = [];

beforeAll(async () => {
  // The source's per-token request limit is off: these runs read it many times over in minutes.
  source = await createHarness({ env: { PARLEY_API_RATE_LIMIT: '0' } });
  owner = await source.signUp();
  seeded = await seedSource(source, owner, { leads: LEADS, messagesPerLead: PER_LEAD });
  sourceUrl = await source.app.listen({ port: 0, host: '127.0.0.1' });
}, 300_000);
afterAll(async () => {
  for (const s of servers) await s.close();
  for (const t of targets) await t.close();
  await source?.close();
});

async function target(): Promise<Harness> {
  const h = await createHarness({ sqliteFile: true });
  targets.push(h);
  return h;
}

/** Waits are recorded, never slept: the client's patience is checked without time passing. */
function options(extra: Partial<MigrateOptions> = {}): MigrateOptions & { waits: number[] } {
  const waits: number[] = [];
  return {
    from: sourceUrl,
    token: owner.access,
    dryRun: false,
    rate: 1000,
    concurrency: 4,
    sleep: async (ms) => void waits.push(ms),
    waits,
    ...extra,
  };
}

const run = (h: Harness, opts: MigrateOptions, progress: (phase: string, done: number, total: number) => void = () => {}) =>
  migrateAccount(h.services, opts, progress);

/** A token of the target account's owner (copied without a password: one is set here for the test). */
async function ownerToken(h: Harness, accountId: number): Promise<string> {
  const db = h.database.db.kysely;
  const user = await db
    .selectFrom('users')
    .select('login')
    .where('account_id', '=', accountId)
    .where('role', '=', 'owner')
    .executeTakeFirstOrThrow();
  await h.services.accounts.resetOwnerPassword(user.login, 'target password 123');
  await db.updateTable('users').set({ confirmed: 1 }).where('login', '=', user.login).execute();
  const res = await h.request({ method: 'POST', url: '/v1.3/auth/login', payload: { login: user.login, pass: 'target password 123' } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().accessToken.token;
}

async function get(h: Harness, token: string, url: string) {
  const res = await h.request({ method: 'GET', url, token });
  expect(res.statusCode, `${url}: ${res.body}`).toBe(200);
  return res.json();
}

/**
 * What an account answers through the API, with every id replaced by what it names (status and
 * payment type by name, employees by login, integrations by type, leads by their customer's name),
 * so that two installations compare.
 */
async function view(h: Harness, token: string, historyEvery = 25) {
  const statuses = new Map<number, string>(
    (await get(h, token, '/v1.3/statuses')).map((s: { id: number; name: string }) => [s.id, s.name]),
  );
  const employees = new Map<number, string>(
    (await get(h, token, '/v1.3/managers')).map((e: { id: number; login: string }) => [e.id, e.login]),
  );
  const payments = new Map<number, string>(
    (await get(h, token, '/v1.3/payment-types')).map((p: { id: number; title: string }) => [p.id, p.title]),
  );
  const lists: Record<string, unknown[]> = {};
  const byName = new Map<string, { id: number; customer: { id: number } }>();
  for (const list of ['inbox', 'active', 'completed', 'all']) {
    const items: Array<Record<string, any>> = [];
    for (let offset = 0; ; offset += 200) {
      const page = await get(h, token, `/v1.3/leads/${list}?offset=${offset}&limit=200${list === 'all' ? '&ignore=true' : ''}`);
      items.push(...page);
      if (page.length < 200) break;
    }
    lists[list] = items
      .map((l) => {
        byName.set(l.customer.name, l as never);
        return {
          customer: l.customer.name,
          email: l.customer.email,
          status: l.statusId === null ? null : statuses.get(l.statusId),
          user: l.userId === null ? null : employees.get(l.userId),
          payment: l.paymentTypeId === null ? null : payments.get(l.paymentTypeId),
          integration: `${l.socialAccount.type}/${l.socialAccount.login}`,
          read: l.read,
          details: l.details,
          amount: l.amount,
          tags: l.tags,
          responseTime: l.responseTime,
          address: l.address,
          ttn: l.ttn,
          customData: l.customData,
          customFields: JSON.parse(l.customFields),
          items: l.items,
          createdAt: l.createdAt,
          message: l.message && { ...l.message, data: { ...l.message.data, attachments: l.message.data.attachments.length } },
        };
      })
      .sort((a, b) => a.customer.localeCompare(b.customer));
  }
  const histories: Record<string, unknown> = {};
  const customers: Record<string, unknown> = {};
  const names = [...byName.keys()].sort();
  for (const name of names.filter((_, i) => i % historyEvery === 0)) {
    const lead = byName.get(name)!;
    const c = await get(h, token, `/v1.3/customers/${lead.customer.id}`);
    customers[name] = { ...c, id: undefined, profiles: c.profiles.map((p: Record<string, unknown>) => ({ ...p, id: undefined })) };
    const sources = await get(h, token, `/v1.3/messaging/${lead.id}/sources`);
    const messages: unknown[] = [];
    for (const s of sources) {
      let cursor: number | undefined;
      for (;;) {
        const res = await h.request({
          method: 'POST',
          url: `/v1.3/messaging/${lead.id}/history/${s.realId}`,
          token,
          payload: cursor === undefined ? {} : { cursor },
        });
        const page = res.json();
        for (const m of page.messages)
          messages.push({
            datetime: m.datetime,
            incoming: m.incoming,
            text: m.message.text,
            attachments: m.message.attachments.map((a: { type: string; text?: string }) => `${a.type}:${a.text}`),
            replyTo: m.replyTo?.message?.text ?? null,
            sender: m.incoming ? m.sender.socialId : m.sender.userId === undefined ? null : employees.get(m.sender.userId),
          });
        if (page.cursor === -1 || !page.messages.length) break;
        cursor = page.cursor;
      }
    }
    histories[name] = { type: sources.map((s: { type: string; id: string; sender: string }) => `${s.type}:${s.id}:${s.sender}`), messages };
  }
  return {
    lists,
    histories,
    customers,
    statuses: [...statuses.values()].sort(),
    employees: [...employees.values()].sort(),
    payments: [...payments.values()],
  };
}

const copied = (r: MigrationReport, kind: string) => r.copied[kind] ?? 0;

describe('parley migrate from a second Parley', () => {
  let sourceView: Awaited<ReturnType<typeof view>>;
  beforeAll(async () => {
    sourceView = await view(source, owner.access);
  }, 120_000);

  it('copies the whole account; the target answers the same lists, fields, profiles and histories; a second run copies nothing', async () => {
    const h = await target();
    const phases = new Set<string>();
    const first = await run(h, options(), (phase) => phases.add(phase));
    expect(first.interrupted).toBe(false);
    expect(copied(first, 'leads')).toBe(LEADS);
    expect(copied(first, 'messages')).toBe(seeded.messages);
    expect(copied(first, 'employees')).toBe(2);
    expect(copied(first, 'integrations')).toBe(3);
    // Phrases as the source's owner sees them (another employee's personal phrase is theirs alone).
    const phrases = (await get(source, owner.access, '/v1.3/templates')).flatMap((g: { templates: unknown[] }) => g.templates);
    expect(copied(first, 'templates')).toBe(phrases.length);
    expect([...phases]).toEqual(expect.arrayContaining(['customers', 'leads', 'histories']));
    // The stored photo was downloaded once; the missing one and the private host are reported.
    expect(copied(first, 'attachments')).toBe(1);
    expect(first.skipped.filter((s) => s.kind === 'attachment').map((s) => s.reason)).toEqual(
      expect.arrayContaining([expect.stringMatching(/answered 404/), expect.stringMatching(/refused address 10\.0\.0\.1/)]),
    );
    expect(first.webhooks).toEqual(['https://hooks.example.com/parley']);
    // Customers and channel lists 200 to a request (docs/migrate.md "How long it takes"): about one
    // request per lead, its history page (10 messages each, one channel each).
    const pages = Math.ceil(LEADS / 200);
    expect(first.requests.byKind).toMatchObject({ 'customers in bulk': pages, 'channel lists in bulk': pages, 'history pages': LEADS });
    expect(first.requests.byKind).not.toHaveProperty('customers');
    expect(first.requests.byKind).not.toHaveProperty('channel lists');

    const accountId = first.accountId!;
    const db = h.database.db.kysely;
    const integrations = await db
      .selectFrom('integrations')
      .select(['status', 'credentials'])
      .where('account_id', '=', accountId)
      .execute();
    expect(integrations.every((i) => i.status === 'auth failure' && i.credentials === null)).toBe(true);
    const users = await db
      .selectFrom('users')
      .select(['login', 'password_hash', 'confirmed', 'role'])
      .where('account_id', '=', accountId)
      .execute();
    expect(users.every((u) => u.password_hash === null && u.confirmed === 0)).toBe(true);
    expect(users.find((u) => u.login === owner.login)?.role).toBe('owner');
    expect(await db.selectFrom('invitations').select('id').where('account_id', '=', accountId).execute()).toHaveLength(2);

    const token = await ownerToken(h, accountId);
    const targetView = await view(h, token);
    expect(targetView.lists).toEqual(sourceView.lists);
    expect(targetView.customers).toEqual(sourceView.customers);
    expect(targetView.histories).toEqual(sourceView.histories);
    expect(targetView.employees).toEqual(sourceView.employees);
    expect(targetView.payments).toEqual(sourceView.payments);

    const second = await run(h, options());
    expect(second.accountId).toBe(accountId);
    expect(second.copied).toEqual({});
    expect(second.unchanged.leads).toBe(LEADS);
    // Nothing new: the channel lists in bulk and each channel's newest page.
    expect(second.requests.byKind).toMatchObject({ 'channel lists in bulk': Math.ceil(LEADS / 200), 'history pages': LEADS });
    expect(Object.keys(second.requests.byKind).sort()).toEqual(['channel lists in bulk', 'history pages', 'lead lists', 'other']);
    const n = await db
      .selectFrom('messages')
      .select(db.fn.countAll().as('n'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    expect(Number(n.n)).toBe(seeded.messages);

    // A new message at the source: the next run copies it and only it.
    const lead = seeded.leadIds[7]!;
    const row = await source.database.db.kysely
      .selectFrom('messages')
      .selectAll()
      .where('lead_id', '=', lead)
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    const late = await source.database.db.kysely
      .insertInto('messages')
      .values({ ...row, id: undefined as never, external_id: 'late-1', text: 'one more', created_at: row.created_at + 5000 })
      .returning(['id', 'created_at'])
      .executeTakeFirstOrThrow();
    await source.database.db.kysely
      .updateTable('leads')
      .set({ last_message_id: late.id, last_message_at: late.created_at })
      .where('id', '=', lead)
      .execute();
    seeded.messages++;
    const third = await run(h, options());
    expect(third.copied).toEqual({ messages: 1 });
    expect((await view(h, token, 1)).histories).toEqual((await view(source, owner.access, 1)).histories);
  }, 300_000);

  it('waits for 429 Retry-After and 502s; a run interrupted half-way and run again ends with the same account', async () => {
    const flaky = await serve(
      proxy(sourceUrl, (_req, n) => {
        if (n % 13 === 0) return { status: 429, headers: { 'retry-after': '3' } };
        if (n % 17 === 0) return { status: 502 };
        return undefined;
      }),
    );
    servers.push(flaky);
    const h = await target();
    // Stopped while reading customers (a request in flight is cut off), then while copying histories.
    const early = new AbortController();
    const stopped = await run(h, options({ from: flaky.url, signal: early.signal }), (phase, done) => {
      if (phase === 'customers' && done >= 20) early.abort();
    });
    expect(stopped).toMatchObject({ interrupted: true, copied: expect.not.objectContaining({ leads: expect.anything() }) });
    const stop = new AbortController();
    const first = options({ from: flaky.url, signal: stop.signal });
    const partial = await run(h, first, (phase, done) => {
      if (phase === 'histories' && done >= LEADS / 2) stop.abort();
    });
    expect(partial.interrupted).toBe(true);
    expect(copied(partial, 'messages')).toBeLessThan(seeded.messages);
    expect(first.waits).toContain(3000);
    expect(first.waits.some((w) => w > 0 && w !== 3000)).toBe(true);

    const rest = await run(h, options({ from: flaky.url }));
    expect(rest.interrupted).toBe(false);
    expect(copied(partial, 'messages') + copied(rest, 'messages')).toBe(seeded.messages);
    expect(copied(partial, 'leads') + copied(rest, 'leads')).toBe(LEADS);
    const token = await ownerToken(h, rest.accountId!);
    const [targetView, now] = await Promise.all([view(h, token, 50), view(source, owner.access, 50)]);
    expect(targetView).toEqual(now);
  }, 300_000);
});

describe('parley migrate: refusals and the CLI', () => {
  async function cli(h: Harness, ...argv: string[]) {
    const env = {
      PARLEY_DATA_DIR: h.dataDir,
      PARLEY_JWT_SECRET: h.config.jwtSecret!,
      PARLEY_LOG_LEVEL: 'warn',
      ...(h.database.url ? { DATABASE_URL: h.database.url } : {}),
    };
    const out: string[] = [];
    const err: string[] = [];
    const sink = { log: (...a: unknown[]) => void out.push(a.join(' ')), error: (...a: unknown[]) => void err.push(a.join(' ')) };
    const code = await runCli(argv, env, sink as unknown as Console);
    return { code, out: out.join('\n'), err: err.join('\n') };
  }
  const accounts = async (h: Harness) => (await h.services.accounts.list()).length;

  it('a dry run reads and counts and writes nothing', async () => {
    const h = await target();
    const before = await accounts(h);
    const res = await cli(h, 'migrate', '--from', sourceUrl, '--token', owner.access, '--dry-run', '--rate', '500');
    expect(res.code, res.err).toBe(0);
    expect(res.out).toMatch(new RegExp(`^dry run: nothing was written; would copy .*leads ${LEADS}.*messages ${seeded.messages}`));
    expect(await accounts(h)).toBe(before);
    const db = h.database.db.kysely;
    expect(await db.selectFrom('migration_ids').select('kind').execute()).toEqual([]);
    expect(await db.selectFrom('account_migrations').select('source').execute()).toEqual([]);
  }, 120_000);

  it('a wrong token, a URL that is not this API and a source without v1.3 are refused before anything is written', async () => {
    const h = await target();
    const before = await accounts(h);
    const wrong = await cli(h, 'migrate', '--from', sourceUrl, '--token', 'not-a-token');
    expect(wrong).toMatchObject({ code: 1, err: expect.stringMatching(/^parley: the source refused the token \(401\)/) });
    const old = await serve((_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"message":"Not found"}');
    });
    servers.push(old);
    const missing = await cli(h, 'migrate', '--from', old.url, '--token', 'x');
    expect(missing.err).toMatch(/does not serve the v1\.3 API \(GET \/v1\.3\/account\/me answered 404\)/);
    const html = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>hello</html>');
    });
    servers.push(html);
    expect((await cli(h, 'migrate', '--from', html.url, '--token', 'x')).err).toMatch(/is not a server speaking this API/);
    expect((await cli(h, 'migrate', '--from', 'ftp://x', '--token', 'x')).err).toMatch(/--from must be an http or https URL/);
    expect((await cli(h, 'migrate', '--token', 'x')).err).toMatch(/--from is required/);
    expect(await accounts(h)).toBe(before);
  });

  it('refuses a target whose account already has the owner login, unless --into names it', async () => {
    const h = await target();
    const mine = await h.services.accounts.createWithOwner({ login: owner.login, pass: 'another password', name: 'Here' });
    const bystander = await h.services.accounts.createWithOwner({
      login: 'bystander@example.com',
      pass: 'another password',
      name: 'Other',
    });
    const { countAccountRows } = await import('../src/domain/retention/retention.repo.js');
    const bystanderRows = await countAccountRows(h.database.db.kysely, bystander.account_id);
    const refused = await cli(h, 'migrate', '--from', sourceUrl, '--token', owner.access, '--rate', '500');
    expect(refused.err).toBe(
      `parley: an account here already has the login ${owner.login} (account ${mine.account_id}): name it with --into ${mine.account_id}`,
    );
    expect(await h.database.db.kysely.selectFrom('leads').select('id').execute()).toEqual([]);
    const report = await run(h, options({ into: mine.account_id, since: Date.parse('2000-01-01') }));
    expect(report.accountId).toBe(mine.account_id);
    expect(copied(report, 'leads')).toBe(LEADS);
    // The owner here is the source's owner: not copied again, and the only owner.
    const owners = await h.database.db.kysely
      .selectFrom('users')
      .select('id')
      .where('account_id', '=', mine.account_id)
      .where('role', '=', 'owner')
      .execute();
    expect(owners).toEqual([{ id: mine.id }]);
    // Only the target account was written.
    expect(await countAccountRows(h.database.db.kysely, bystander.account_id)).toBe(bystanderRows);
  }, 300_000);
});
