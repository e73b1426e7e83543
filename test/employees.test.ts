import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createLead, createManager } from './helpers/fixtures.js';
import { createMailHarness, decodeBody, type ReceivedMail } from './helpers/smtp.js';
import { API_VERSIONS } from '../src/api/versions.js';
import { scopeOf } from '../src/domain/policy/policy.js';

const DAY = 24 * 3600 * 1000;

const LINK = /(https?:\/\/[^\s]+\/invite\?token=([A-Za-z0-9_-]+))/;

let h: Harness;
let close: () => Promise<void>;
const inbox: ReceivedMail[] = [];

beforeAll(async () => {
  // Many sign-ups and logins from one test address.
  ({ h, close } = await createMailHarness(inbox, { PARLEY_LOGIN_MAX_PER_IP: '100000' }));
});
afterAll(() => close());

let seq = 0;
const uniqueLogin = (prefix = 'invitee') => `${prefix}${++seq}-${Math.random().toString(36).slice(2, 7)}@example.com`;

const invite = (owner: Pick<SignedUp, 'access'>, body: object, version = 'v1.3') =>
  h.request({ method: 'POST', url: `/${version}/managers`, payload: body, token: owner.access });
const listEmployees = (token: string, version = 'v1.3') => h.request({ method: 'GET', url: `/${version}/managers`, token });
const accept = (body: object) => h.request({ method: 'POST', url: '/v1.3/auth/invitation', payload: body });
const login = (loginName: string, pass: string) =>
  h.request({ method: 'POST', url: '/v1.3/auth/login', payload: { login: loginName, pass } });
const me = (token: string) => h.request({ method: 'GET', url: '/v1.3/account/me', token });

function mailTo(address: string): { raw: string; text: string; token: string; link: string } {
  const mail = inbox.filter((m) => m.to.includes(address)).at(-1);
  if (!mail) throw new Error(`no mail to ${address}`);
  const text = decodeBody(mail.raw);
  const match = LINK.exec(text);
  if (!match) throw new Error(`no invitation link in: ${text}`);
  return { raw: mail.raw, text, link: match[1]!, token: match[2]! };
}

async function userCount(): Promise<number> {
  const rows = await h.database.db.kysely.selectFrom('users').select('id').execute();
  return rows.length;
}

async function sourcesOf(userId: number) {
  return h.database.db.kysely.selectFrom('user_sources').select(['id', 'sa_id']).where('user_id', '=', userId).orderBy('id').execute();
}

/** The id of the employee with this login, from the v1.3 list. */
async function employeeId(owner: SignedUp, loginName: string): Promise<number> {
  const found = (await listEmployees(owner.access)).json().find((e: { login: string }) => e.login === loginName);
  if (!found) throw new Error(`${loginName} is not listed`);
  return found.id;
}

describe('role matrix of the employee routes', () => {
  for (const version of API_VERSIONS) {
    it(`${version}: owner 200, manager 403 (200 for the list), other account's owner 404 on ids, no token 401`, async () => {
      const owner = await h.signUp();
      const manager = await createManager(h, owner);
      const other = await h.signUp();
      const target = async () => (await createManager(h, owner)).userId;

      type Case = {
        method: 'GET' | 'POST' | 'PUT' | 'DELETE';
        url: (id: number) => string;
        body?: () => object;
        idRoute: boolean;
        managerStatus: number;
      };
      const cases: Case[] = [
        { method: 'GET', url: () => '/managers', idRoute: false, managerStatus: 200 },
        { method: 'POST', url: () => '/managers', body: () => ({ login: uniqueLogin(), sources: [] }), idRoute: false, managerStatus: 403 },
        { method: 'PUT', url: (id) => `/managers/${id}`, body: () => ({ sources: [] }), idRoute: true, managerStatus: 403 },
        {
          method: 'PUT',
          url: (id) => `/managers/users-access/${id}`,
          body: () => ({ allowedUsers: [] }),
          idRoute: true,
          managerStatus: 403,
        },
        { method: 'DELETE', url: (id) => `/managers/${id}`, idRoute: true, managerStatus: 403 },
      ];
      for (const c of cases) {
        const call = async (token: string | undefined) => {
          const id = await target();
          const res = await h.request({ method: c.method, url: `/${version}${c.url(id)}`, payload: c.body?.(), token });
          return { res, id };
        };
        const label = `${version} ${c.method} ${c.url(0)}`;
        expect((await call(owner.access)).res.statusCode, `${label} owner`).toBe(200);
        expect((await call(manager.access)).res.statusCode, `${label} manager`).toBe(c.managerStatus);
        const foreign = await call(other.access);
        expect(foreign.res.statusCode, `${label} other owner`).toBe(c.idRoute ? 404 : 200);
        if (c.idRoute) {
          // The foreign owner changed nothing: the target is still there, with no access records.
          expect(await sourcesOf(foreign.id)).toEqual([]);
          expect((await listEmployees(owner.access)).json().some((e: { id: number }) => e.id === foreign.id)).toBe(true);
        }
        expect((await call(undefined)).res.statusCode, `${label} no token`).toBe(401);
      }
      // The other account's list holds its own employees only (the one its owner just invited included).
      const otherIds = (await listEmployees(other.access, version)).json().map((e: { id: number }) => e.id);
      const accountsListed = await h.database.db.kysely.selectFrom('users').select('account_id').where('id', 'in', otherIds).execute();
      expect(otherIds).toContain(other.userId);
      expect(new Set(accountsListed.map((r) => r.account_id))).toEqual(new Set([other.accountId]));
    });
  }

  it('a manager that may list employees sees the same list as the owner', async () => {
    const owner = await h.signUp();
    const manager = await createManager(h, owner);
    const byOwner = await listEmployees(owner.access);
    const byManager = await listEmployees(manager.access);
    expect(byManager.statusCode).toBe(200);
    expect(byManager.json()).toEqual(byOwner.json());
  });

  it('a manager that tries to invite creates nothing', async () => {
    const owner = await h.signUp();
    const manager = await createManager(h, owner);
    const before = await userCount();
    const res = await invite(manager, { login: uniqueLogin(), sources: [] });
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('forbidden');
    expect(await userCount()).toBe(before);
  });
});

describe('invitation through SMTP', () => {
  it('invites, mails a one-time link, confirms with it, and the employee then signs in', async () => {
    const owner = await h.signUp(undefined, undefined, 'Olga Owner');
    const address = uniqueLogin('New.Person');
    const res = await invite(owner, { login: address.toUpperCase(), sources: [] });
    expect(res.statusCode).toBe(200);
    const created = res.json().find((e: { login: string }) => e.login === address.toLowerCase());
    expect(created).toMatchObject({ name: null, role: 'manager', confirmed: false, allowAllDeals: false, sources: [] });
    expect(res.json().map((e: { id: number }) => e.id)).toEqual([owner.userId, created.id]);

    const mail = mailTo(address.toLowerCase());
    expect(mail.raw).toMatch(/^From: Parley <noreply@parley\.test>/m);
    expect(mail.raw).toMatch(/^Subject: Invitation to Olga Owner on Parley/m);
    expect(mail.text).toContain('Olga Owner invited you');
    expect(mail.link).toMatch(/^http:\/\/localhost:8080\/invite\?token=/);

    // Unconfirmed: no password yet, no sign-in.
    expect((await login(address, 'the new password')).statusCode).toBe(401);

    const accepted = await accept({ token: mail.token, pass: 'the new password', name: '  Nina Newcomer ' });
    expect(accepted.statusCode).toBe(200);
    expect(Object.keys(accepted.json()).sort()).toEqual(['accessToken', 'refreshToken']);
    const who = (await me(accepted.json().accessToken.token)).json();
    expect(who.user).toMatchObject({ id: created.id, login: address.toLowerCase(), name: 'Nina Newcomer', role: 'manager' });

    const listed = (await listEmployees(owner.access)).json().find((e: { id: number }) => e.id === created.id);
    expect(listed).toMatchObject({ name: 'Nina Newcomer', confirmed: true });
    expect((await login(address, 'the new password')).statusCode).toBe(200);

    // The link works once: a second use is refused and changes nothing.
    const again = await accept({ token: mail.token, pass: 'another password', name: 'Mallory' });
    expect(again.statusCode).toBe(401);
    expect(again.json().code).toBe('unauthorized');
    expect((await login(address, 'another password')).statusCode).toBe(401);
    expect((await login(address, 'the new password')).statusCode).toBe(200);
    expect((await listEmployees(owner.access)).json().find((e: { id: number }) => e.id === created.id).name).toBe('Nina Newcomer');
  });

  it('stores only a hash of the invitation token', async () => {
    const owner = await h.signUp();
    const address = uniqueLogin();
    expect((await invite(owner, { login: address })).statusCode).toBe(200);
    const { token } = mailTo(address);
    const rows = await h.database.db.kysely.selectFrom('invitations').selectAll().execute();
    expect(JSON.stringify(rows)).not.toContain(token);
  });

  it('refuses an expired invitation (7 days by default) and leaves the employee unconfirmed', async () => {
    const owner = await h.signUp();
    const early = uniqueLogin();
    const late = uniqueLogin();
    expect((await invite(owner, { login: early })).statusCode).toBe(200);
    expect((await invite(owner, { login: late })).statusCode).toBe(200);

    h.clock.advance(7 * DAY - 60_000);
    expect((await accept({ token: mailTo(early).token, pass: 'password one', name: 'Early' })).statusCode).toBe(200);
    h.clock.advance(120_000);
    const expired = await accept({ token: mailTo(late).token, pass: 'password two', name: 'Late' });
    expect(expired.statusCode).toBe(401);

    const row = await h.database.db.kysely.selectFrom('users').selectAll().where('login', '=', late).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ confirmed: 0, name: null, password_hash: null });
    expect((await login(late, 'password two')).statusCode).toBe(401);
  });

  it('refuses an unknown token and validates the body', async () => {
    expect((await accept({ token: 'not-a-token', pass: 'long enough', name: 'X' })).statusCode).toBe(401);
    const owner = await h.signUp();
    const address = uniqueLogin();
    await invite(owner, { login: address });
    const { token } = mailTo(address);
    const short = await accept({ token, pass: 'short', name: 'X' });
    expect(short.statusCode).toBe(400);
    expect(short.json().details[0].path).toBe('body.pass');
    expect((await accept({ token, pass: 'long enough', name: '   ' })).statusCode).toBe(400);
    expect((await accept({ token, pass: 'long enough' })).statusCode).toBe(400);
    // None of those used the invitation up.
    expect((await accept({ token, pass: 'long enough', name: 'Valid' })).statusCode).toBe(200);
  });

  it('answers 502 and creates nothing when the SMTP server cannot be reached', async () => {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const down = await createHarness({ env: { PARLEY_SMTP_URL: `smtp://127.0.0.1:${port}` } });
    try {
      const owner = await down.signUp();
      const address = uniqueLogin();
      const res = await down.request({ method: 'POST', url: '/v1.3/managers', payload: { login: address }, token: owner.access });
      expect(res.statusCode).toBe(502);
      expect(res.json().code).toBe('mail_failed');
      const rows = await down.database.db.kysely.selectFrom('users').select('id').where('login', '=', address).execute();
      expect(rows).toEqual([]);
      expect(await down.database.db.kysely.selectFrom('invitations').selectAll().execute()).toEqual([]);
    } finally {
      await down.close();
    }
  });
});

describe('invitation without SMTP', () => {
  it('writes the invitation to the log, with a link on PARLEY_PUBLIC_URL that works', async () => {
    const logged: Array<{ obj: any; msg?: string }> = [];
    const capture = {
      info: (obj: unknown, msg?: string) => logged.push({ obj, msg }),
      warn() {},
      error() {},
      debug() {},
    };
    const local = await createHarness({ env: { PARLEY_PUBLIC_URL: 'https://inbox.example.com/' }, log: capture });
    try {
      const owner = await local.signUp();
      const address = uniqueLogin();
      const res = await local.request({ method: 'POST', url: '/v1.3/managers', payload: { login: address }, token: owner.access });
      expect(res.statusCode).toBe(200);
      const entry = logged.find((e) => e.obj?.mail?.to === address);
      expect(entry?.msg).toMatch(/not sent/);
      const match = LINK.exec(entry!.obj.mail.text);
      expect(match?.[1]).toMatch(/^https:\/\/inbox\.example\.com\/invite\?token=/);
      const accepted = await local.request({
        method: 'POST',
        url: '/v1.3/auth/invitation',
        payload: { token: match![2], pass: 'from the log', name: 'Logged' },
      });
      expect(accepted.statusCode).toBe(200);
    } finally {
      await local.close();
    }
  });
});

describe('employee objects per version', () => {
  const BASE = ['allowAllDeals', 'confirmed', 'id', 'login', 'name', 'role', 'sources'];
  const FULL = [...BASE, 'allowedUsers', 'metadata', 'locale', 'available'].sort();

  it('v1.1 and v1.2 omit allowedUsers and metadata; v1.3 carries them, locale and available', async () => {
    const owner = await h.signUp();
    const manager = await createManager(h, owner, { allowedUsers: [owner.userId] });
    for (const version of API_VERSIONS) {
      const list = (await listEmployees(owner.access, version)).json();
      const expected = version === 'v1.3' ? FULL : BASE;
      for (const e of list) expect(Object.keys(e).sort(), version).toEqual(expected);
      const put = await h.request({
        method: 'PUT',
        url: `/${version}/managers/${manager.userId}`,
        payload: { allowAllDeals: true },
        token: owner.access,
      });
      expect(Object.keys(put.json()).sort(), version).toEqual(expected);
      const access = await h.request({
        method: 'PUT',
        url: `/${version}/managers/users-access/${manager.userId}`,
        payload: { allowedUsers: [owner.userId] },
        token: owner.access,
      });
      expect(Object.keys(access.json()).sort(), version).toEqual(expected);
      const created = await invite(owner, { login: uniqueLogin() }, version);
      for (const e of created.json()) expect(Object.keys(e).sort(), version).toEqual(expected);
    }
    const v13 = (await listEmployees(owner.access)).json();
    expect(v13[0]).toEqual({
      id: owner.userId,
      name: 'Owner',
      login: owner.login,
      role: 'owner',
      confirmed: true,
      allowAllDeals: true,
      sources: [],
      allowedUsers: null,
      metadata: {},
      locale: null,
      available: true,
    });
    expect(v13.find((e: { id: number }) => e.id === manager.userId)).toMatchObject({ role: 'manager', allowedUsers: [owner.userId] });
  });

  it('answers the version error body for bad input and bad ids', async () => {
    const owner = await h.signUp();
    const legacy = await invite(owner, { login: 'not-an-email' }, 'v1.1');
    expect(legacy.statusCode).toBe(400);
    expect(legacy.json()).toMatchObject({ statusCode: 400 });
    expect((await h.request({ method: 'DELETE', url: '/v1.3/managers/abc', token: owner.access })).statusCode).toBe(400);
    expect((await h.request({ method: 'DELETE', url: '/v1.2/managers/abc', token: owner.access })).statusCode).toBe(404);
    expect((await h.request({ method: 'DELETE', url: '/v1.1/managers/abc', token: owner.access })).statusCode).toBe(404);
  });
});

describe('logins', () => {
  it('refuses a login that is not an e-mail (400) and one that exists anywhere (409), creating nothing', async () => {
    const owner = await h.signUp();
    const elsewhere = await h.signUp();
    const colleague = await createManager(h, owner);
    const before = await userCount();
    const mailsBefore = inbox.length;

    const notEmail = await invite(owner, { login: 'just a name' });
    expect(notEmail.statusCode).toBe(400);
    expect(notEmail.json().details[0].path).toBe('body.login');
    expect((await invite(owner, { login: `${'x'.repeat(250)}@example.com` })).statusCode).toBe(400);

    const taken = await invite(owner, { login: elsewhere.login.toUpperCase() });
    expect(taken.statusCode).toBe(409);
    expect(taken.json().code).toBe('conflict');
    expect((await invite(owner, { login: colleague.login })).statusCode).toBe(409);
    expect((await invite(owner, { login: owner.login })).statusCode).toBe(409);

    expect(await userCount()).toBe(before);
    expect(inbox.length).toBe(mailsBefore);
  });
});

describe('sources', () => {
  /** What the policy module makes of an employee's records, through its own token. */
  async function integrationsReached(loginName: string, pass: string) {
    const res = await login(loginName, pass);
    const auth = await h.services.auth.authenticate(res.json().accessToken.token);
    return (await scopeOf(h.database.db.kysely, auth)).integrations;
  }

  async function inviteAndAccept(owner: SignedUp, sources: object[]) {
    const address = uniqueLogin();
    const res = await invite(owner, { login: address, sources });
    expect(res.statusCode, res.body).toBe(200);
    expect((await accept({ token: mailTo(address).token, pass: 'employee pass', name: 'E' })).statusCode).toBe(200);
    const id = await employeeId(owner, address);
    return { id, login: address, employee: (await listEmployees(owner.access)).json().find((e: { id: number }) => e.id === id) };
  }

  it('empty = all integrations; one record with saId null = none; listed integrations = those', async () => {
    const owner = await h.signUp();
    const a = await createIntegration(h, owner.accountId);
    const b = await createIntegration(h, owner.accountId);

    const all = await inviteAndAccept(owner, []);
    expect(all.employee.sources).toEqual([]);
    expect(await integrationsReached(all.login, 'employee pass')).toBe('all');

    const none = await inviteAndAccept(owner, [{ saId: null }]);
    expect(none.employee.sources).toEqual([{ id: expect.any(Number), saId: null }]);
    expect(await integrationsReached(none.login, 'employee pass')).toEqual([]);

    const some = await inviteAndAccept(owner, [{ saId: b }, { saId: a }, { saId: b }]);
    expect(some.employee.sources.map((s: { saId: number }) => s.saId)).toEqual([b, a]);
    const reached = await integrationsReached(some.login, 'employee pass');
    expect(reached === 'all' ? reached : [...reached].sort((x, y) => x - y)).toEqual([a, b].sort((x, y) => x - y));
  });

  it("refuses an unknown saId, another account's integration, a disconnected one, and null mixed with ids (400, nothing created)", async () => {
    const owner = await h.signUp();
    const other = await h.signUp();
    const mine = await createIntegration(h, owner.accountId);
    const theirs = await createIntegration(h, other.accountId);
    const gone = await createIntegration(h, owner.accountId);
    await h.database.db.kysely.updateTable('integrations').set({ deleted_at: h.clock.now() }).where('id', '=', gone).execute();
    const before = await userCount();
    const mailsBefore = inbox.length;

    for (const sources of [[{ saId: 987654 }], [{ saId: mine }, { saId: theirs }], [{ saId: gone }], [{ saId: null }, { saId: mine }]]) {
      const res = await invite(owner, { login: uniqueLogin(), sources });
      expect(res.statusCode, JSON.stringify(sources)).toBe(400);
      expect(res.json().code).toBe('validation_failed');
    }
    const res = await invite(owner, { login: uniqueLogin(), sources: [{ saId: mine }, { saId: theirs }] });
    expect(res.json().details).toEqual([{ path: 'body.sources.1.saId', message: expect.stringContaining(String(theirs)) }]);
    expect((await invite(owner, { login: uniqueLogin(), sources: [{ saId: 'x' }] })).statusCode).toBe(400);
    expect(await userCount()).toBe(before);
    expect(inbox.length).toBe(mailsBefore);
  });

  it('PUT replaces the records, keeps the id of a named record, and [] / [null] mean all / none', async () => {
    const owner = await h.signUp();
    const [a, b, c] = [
      await createIntegration(h, owner.accountId),
      await createIntegration(h, owner.accountId),
      await createIntegration(h, owner.accountId),
    ];
    const manager = await createManager(h, owner, { sources: [a, b] });
    const put = (body: object) => h.request({ method: 'PUT', url: `/v1.3/managers/${manager.userId}`, payload: body, token: owner.access });
    const [recA, recB] = await sourcesOf(manager.userId);

    let res = await put({ sources: [{ id: recA!.id, saId: c }, { saId: b }] });
    expect(res.statusCode).toBe(200);
    expect(res.json().sources[0]).toEqual({ id: recA!.id, saId: c });
    expect(res.json().sources.map((s: { saId: number }) => s.saId)).toEqual([c, b]);
    expect((await sourcesOf(manager.userId)).map((r) => r.id)).not.toContain(recB!.id);

    // allowAllDeals alone leaves the records as they are.
    const recordsBefore = await sourcesOf(manager.userId);
    res = await put({ allowAllDeals: true });
    expect(res.json()).toMatchObject({ allowAllDeals: true });
    expect(await sourcesOf(manager.userId)).toEqual(recordsBefore);

    res = await put({ sources: [] });
    expect(res.json().sources).toEqual([]);
    expect(await sourcesOf(manager.userId)).toEqual([]);

    res = await put({ sources: [{ saId: null }] });
    expect(res.json().sources).toEqual([{ id: expect.any(Number), saId: null }]);

    // An id that is not one of this employee's records is simply a new record.
    res = await put({ sources: [{ id: 99999999, saId: a }] });
    expect(res.json().sources).toEqual([{ id: expect.any(Number), saId: a }]);
    expect(res.json().sources[0].id).not.toBe(99999999);
  });

  it('PUT with an unknown saId is 400 and leaves the records and allowAllDeals unchanged', async () => {
    const owner = await h.signUp();
    const a = await createIntegration(h, owner.accountId);
    const manager = await createManager(h, owner, { sources: [a] });
    const before = await sourcesOf(manager.userId);
    const res = await h.request({
      method: 'PUT',
      url: `/v1.3/managers/${manager.userId}`,
      payload: { sources: [{ saId: 424242 }], allowAllDeals: true },
      token: owner.access,
    });
    expect(res.statusCode).toBe(400);
    expect(await sourcesOf(manager.userId)).toEqual(before);
    const row = await h.database.db.kysely
      .selectFrom('users')
      .select('allow_all_deals')
      .where('id', '=', manager.userId)
      .executeTakeFirstOrThrow();
    expect(row.allow_all_deals).toBe(0);
  });
});

describe('allowedUsers', () => {
  it('replaces the list on every call, feeds lead visibility, and refuses unknown ids (400, unchanged)', async () => {
    const owner = await h.signUp();
    const other = await h.signUp();
    const m1 = await createManager(h, owner);
    const m2 = await createManager(h, owner);
    const foreign = await createManager(h, other);
    const put = (ids: unknown) =>
      h.request({ method: 'PUT', url: `/v1.3/managers/users-access/${m1.userId}`, payload: { allowedUsers: ids }, token: owner.access });

    let res = await put([m2.userId, owner.userId, m2.userId]);
    expect(res.statusCode).toBe(200);
    expect(res.json().allowedUsers).toEqual([m2.userId, owner.userId]);
    const auth = await h.services.auth.authenticate((await login(m1.login, 'manager password')).json().accessToken.token);
    expect((await scopeOf(h.database.db.kysely, auth)).leads).toEqual({ self: m1.userId, allowedUsers: [m2.userId, owner.userId] });

    res = await put([m2.userId]);
    expect(res.json().allowedUsers).toEqual([m2.userId]);

    for (const bad of [[m2.userId, foreign.userId], [123456789]]) {
      const refused = await put(bad);
      expect(refused.statusCode).toBe(400);
      expect(refused.json().details.length).toBe(1);
    }
    expect((await put(['x'])).statusCode).toBe(400);
    expect((await put(null)).statusCode).toBe(400);
    const row = await h.database.db.kysely
      .selectFrom('users')
      .select('allowed_users')
      .where('id', '=', m1.userId)
      .executeTakeFirstOrThrow();
    expect(JSON.parse(row.allowed_users!)).toEqual([m2.userId]);

    res = await put([]);
    expect(res.json().allowedUsers).toEqual([]);
  });
});

describe('the owner', () => {
  it('cannot be deleted (400) and still signs in', async () => {
    const owner = await h.signUp();
    const res = await h.request({ method: 'DELETE', url: `/v1.3/managers/${owner.userId}`, token: owner.access });
    expect(res.statusCode).toBe(400);
    expect((await me(owner.access)).statusCode).toBe(200);
    expect((await login(owner.login, owner.pass)).statusCode).toBe(200);
  });

  it('cannot be restricted: sources or allowAllDeals false -> 400, nothing changed; an unrestricting PUT is fine', async () => {
    const owner = await h.signUp();
    const a = await createIntegration(h, owner.accountId);
    const put = (body: object) => h.request({ method: 'PUT', url: `/v1.3/managers/${owner.userId}`, payload: body, token: owner.access });
    expect((await put({ sources: [{ saId: a }] })).statusCode).toBe(400);
    expect((await put({ sources: [{ saId: null }] })).statusCode).toBe(400);
    expect((await put({ allowAllDeals: false })).statusCode).toBe(400);
    expect(await sourcesOf(owner.userId)).toEqual([]);
    const ok = await put({ sources: [], allowAllDeals: true });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({ role: 'owner', allowAllDeals: true, sources: [] });
    const auth = await h.services.auth.authenticate(owner.access);
    expect(await scopeOf(h.database.db.kysely, auth)).toMatchObject({ integrations: 'all', leads: 'all' });
  });
});

describe('deleting a manager', () => {
  it('unassigns its leads (back to the inbox when without status), records the change, and ends its sessions', async () => {
    const owner = await h.signUp();
    const db = h.database.db.kysely;
    const integration = await createIntegration(h, owner.accountId);
    const leaving = await createManager(h, owner);
    const staying = await createManager(h, owner, { allowedUsers: [leaving.userId] });
    const status = await db
      .insertInto('statuses')
      .values({ account_id: owner.accountId, name: `Working ${seq++}`, type: 'active', position: 50, created_at: h.clock.now() })
      .returning('id')
      .executeTakeFirstOrThrow();
    const inboxLead = await createLead(h, owner.accountId, integration, { userId: leaving.userId });
    const workingLead = await createLead(h, owner.accountId, integration, {
      userId: leaving.userId,
      statusId: status.id,
      statusType: 'active',
    });
    const othersLead = await createLead(h, owner.accountId, integration, { userId: staying.userId });
    const loggedIn = (await login(leaving.login, 'manager password')).json();
    const eventsBefore = (await db.selectFrom('events').select('id').where('account_id', '=', owner.accountId).execute()).length;

    const res = await h.request({ method: 'DELETE', url: `/v1.3/managers/${leaving.userId}`, token: owner.access });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({});

    const lead = (id: number) => db.selectFrom('leads').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(await lead(inboxLead.leadId)).toMatchObject({ user_id: null, status_id: null, status_type: 'inbox' });
    expect(await lead(workingLead.leadId)).toMatchObject({ user_id: null, status_id: status.id, status_type: 'active' });
    expect(await lead(othersLead.leadId)).toMatchObject({ user_id: staying.userId });

    const events = await db.selectFrom('events').selectAll().where('account_id', '=', owner.accountId).orderBy('id').execute();
    const changed = events.slice(eventsBefore);
    expect(changed.map((e) => [e.type, e.lead_id])).toEqual([
      ['lead.changed', inboxLead.leadId],
      ['lead.changed', workingLead.leadId],
    ]);
    expect(JSON.parse(changed[0]!.payload)).toMatchObject({
      type: 'lead.changed',
      accountId: owner.accountId,
      leadId: inboxLead.leadId,
      changes: ['userId'],
      lead: { id: inboxLead.leadId, userId: null, statusId: null },
    });

    // Its tokens and password no longer work.
    expect((await me(leaving.access)).statusCode).toBe(401);
    expect((await me(loggedIn.accessToken.token)).statusCode).toBe(401);
    const refresh = await h.request({ method: 'POST', url: '/v1.3/auth/tokens', payload: { refreshToken: loggedIn.refreshToken.token } });
    expect(refresh.statusCode).toBe(401);
    expect((await login(leaving.login, 'manager password')).statusCode).toBe(401);

    // Gone from the list and from the others' allowedUsers; deleting again is 404.
    const list = (await listEmployees(owner.access)).json();
    expect(list.map((e: { id: number }) => e.id)).not.toContain(leaving.userId);
    expect(list.find((e: { id: number }) => e.id === staying.userId).allowedUsers).toEqual([]);
    expect((await h.request({ method: 'DELETE', url: `/v1.3/managers/${leaving.userId}`, token: owner.access })).statusCode).toBe(404);

    // The login is free again: the same person can be invited anew.
    expect((await invite(owner, { login: leaving.login })).statusCode).toBe(200);
  });
});
