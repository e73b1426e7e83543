import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './helpers/harness.js';
import type { BackgroundWorker } from '../src/domain/workers.js';
import { installationId } from '../src/domain/installation/installation.repo.js';

const PACKAGE_VERSION = (JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const DAY = 24 * 3600 * 1000;

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

describe('GET /health', () => {
  it('answers {status: "ok", version} from package.json without auth', async () => {
    expect(PACKAGE_VERSION).toMatch(/^\d+\.\d+\.\d+/);
    const res = await h.request({ method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json()).toEqual({ status: 'ok', version: PACKAGE_VERSION });
  });

  it('answers HEAD too, which the versioned API routes do not (their HEAD routes cost start-up time)', async () => {
    const head = await h.request({ method: 'HEAD', url: '/health' });
    expect(head.statusCode).toBe(200);
    expect(head.body).toBe('');
    const api = await h.request({ method: 'HEAD', url: '/v1.3/statuses' });
    expect(api.statusCode).toBe(404);
  });

  it("names this installation in a header: the id its database keeps, another installation's differs", async () => {
    const id = await installationId(h.database.db.kysely);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const res = await h.request({ method: 'GET', url: '/health' });
    expect(res.headers['parley-installation']).toBe(id);
    const other = await createHarness();
    try {
      const theirs = (await other.request({ method: 'GET', url: '/health' })).headers['parley-installation'];
      expect(theirs).toBe(await installationId(other.database.db.kysely));
      expect(theirs).not.toBe(id);
    } finally {
      await other.close();
    }
  });

  it('ignores a bad Authorization header (it needs none)', async () => {
    const res = await h.request({ method: 'GET', url: '/health', headers: { authorization: 'Bearer nonsense' } });
    expect(res.statusCode).toBe(200);
  });
});

describe('GET /', () => {
  it('answers the health JSON to API clients', async () => {
    for (const accept of [undefined, 'application/json', '*/*']) {
      const res = await h.request({ method: 'GET', url: '/', headers: accept ? { accept } : {} });
      expect(res.statusCode, String(accept)).toBe(200);
      expect(res.json()).toEqual({ status: 'ok', version: PACKAGE_VERSION });
    }
  });

  it('answers HTML to a browser', async () => {
    const res = await h.request({
      method: 'GET',
      url: '/',
      headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toMatch(/^<!doctype html>/i);
    expect(res.body).toContain('/docs');
  });
});

describe('GET /ready', () => {
  it('answers 200 while the database is up and no worker reports trouble', async () => {
    const res = await h.request({ method: 'GET', url: '/ready' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok', version: PACKAGE_VERSION });
  });

  it('answers 503 naming the worker that is unhealthy, and 200 again once it is gone', async () => {
    const sick: BackgroundWorker = { name: 'webhook-delivery', healthy: () => false, stop: async () => {} };
    const well: BackgroundWorker = { name: 'channel-poller', healthy: () => true, stop: async () => {} };
    h.services.workers.push(well, sick);
    try {
      const res = await h.request({ method: 'GET', url: '/ready' });
      expect(res.statusCode).toBe(503);
      const body = res.json();
      expect(body.failing).toEqual(['webhook-delivery']);
      expect(body.status).not.toBe('ok');
      expect(body.version).toBe(PACKAGE_VERSION);
    } finally {
      h.services.workers.splice(h.services.workers.indexOf(sick), 1);
    }
    const again = await h.request({ method: 'GET', url: '/ready' });
    expect(again.statusCode).toBe(200);
    h.services.workers.splice(h.services.workers.indexOf(well), 1);
  });

  it('answers 503 naming the database when it is unreachable, while /health stays 200', async () => {
    const down = await createHarness();
    try {
      await down.database.db.close();
      const res = await down.request({ method: 'GET', url: '/ready' });
      expect(res.statusCode).toBe(503);
      expect(res.json().failing).toEqual(['database']);
      expect((await down.request({ method: 'GET', url: '/health' })).statusCode).toBe(200);
    } finally {
      await down.close();
    }
  });
});

describe('account info per version (§9, §10)', () => {
  it('answers {account, user} at /v1.1/me, /v1.2/me and /v1.3/account/me', async () => {
    const owner = await h.signUp(undefined, undefined, 'Ada Owner');
    const expected = {
      account: { id: owner.accountId, status: 'active' },
      user: { id: owner.userId, login: owner.login, name: 'Ada Owner', role: 'owner', metadata: {} },
    };
    for (const url of ['/v1.1/me', '/v1.2/me', '/v1.3/account/me']) {
      const res = await h.request({ method: 'GET', url, token: owner.access });
      expect(res.statusCode, url).toBe(200);
      // v1.3 adds the employee's chosen language (null until chosen).
      const want = url === '/v1.3/account/me' ? { ...expected, user: { ...expected.user, locale: null } } : expected;
      expect(res.json(), url).toEqual(want);
    }
  });

  it('has no /me on v1.3 and no /account/me on v1.1 or v1.2', async () => {
    const owner = await h.signUp();
    for (const url of ['/v1.3/me', '/v1.1/account/me', '/v1.2/account/me']) {
      const res = await h.request({ method: 'GET', url, token: owner.access });
      expect(res.statusCode, url).toBe(404);
    }
  });

  it('needs a token', async () => {
    for (const url of ['/v1.1/me', '/v1.2/me', '/v1.3/account/me', '/v1.3/account/me/tariff']) {
      expect((await h.request({ method: 'GET', url })).statusCode, url).toBe(401);
    }
  });
});

describe('tariff (§4, §9)', () => {
  it('answers the plan of a new account in the documented shape (docs/api/resources.md)', async () => {
    const owner = await h.signUp();
    const res = await h.request({ method: 'GET', url: '/v1.3/account/me/tariff', token: owner.access });
    expect(res.statusCode).toBe(200);
    const tariff = res.json();
    expect(Object.keys(tariff).sort()).toEqual(
      ['currency', 'expiration', 'packages', 'period', 'price', 'subscription', 'trial', 'value'].sort(),
    );
    expect(tariff).toEqual({
      trial: false,
      expiration: new Date(h.clock.now() + 36500 * DAY).toISOString(),
      value: '0.00',
      currency: 'USD',
      period: 1,
      subscription: false,
      packages: [],
      price: 0,
    });
    expect(tariff.expiration).toMatch(ISO_MS);
    expect(typeof tariff.value).toBe('string');
  });

  it('shows what the operator set, value as a decimal string and expiration with milliseconds', async () => {
    const owner = await h.signUp();
    const expiration = Date.UTC(2027, 0, 2, 3, 4, 5, 678);
    await h.services.accounts.setPlan(owner.accountId, {
      trial: true,
      expiration,
      value: '12.50',
      currency: 'EUR',
      period: 12,
      subscription: true,
      price: 1250,
      packages: [{ packageId: 3, count: 2, name: 'Extra channels' }],
    });
    const res = await h.request({ method: 'GET', url: '/v1.3/account/me/tariff', token: owner.access });
    expect(res.json()).toEqual({
      trial: true,
      expiration: '2027-01-02T03:04:05.678Z',
      value: '12.50',
      currency: 'EUR',
      period: 12,
      subscription: true,
      packages: [{ packageId: 3, count: 2, name: 'Extra channels' }],
      price: 1250,
    });
  });
});

describe('expired accounts (§9)', () => {
  const meUrls = ['/v1.1/me', '/v1.2/me', '/v1.3/account/me'];

  it('say "expired" once the operator sets a past expiration, and keep answering reads', async () => {
    const owner = await h.signUp();
    const past = h.clock.now() - DAY;
    await h.services.accounts.setPlan(owner.accountId, { expiration: past });
    for (const url of meUrls) {
      const res = await h.request({ method: 'GET', url, token: owner.access });
      expect(res.statusCode, url).toBe(200);
      expect(res.json().account, url).toEqual({ id: owner.accountId, status: 'expired' });
      expect(res.json().user.id).toBe(owner.userId);
    }
    const tariff = await h.request({ method: 'GET', url: '/v1.3/account/me/tariff', token: owner.access });
    expect(tariff.statusCode).toBe(200);
    expect(tariff.json().expiration).toBe(new Date(past).toISOString());
    const keys = await h.request({ method: 'GET', url: '/v1.3/account/me/api-keys', token: owner.access });
    expect(keys.statusCode).toBe(200);
    const login = await h.request({ method: 'POST', url: '/v1.3/auth/login', payload: { login: owner.login, pass: owner.pass } });
    expect(login.statusCode).toBe(200);

    // Another account is not affected.
    const other = await h.signUp();
    expect((await h.request({ method: 'GET', url: '/v1.3/account/me', token: other.access })).json().account.status).toBe('active');
  });

  it('turn "expired" when the clock passes the expiration, not before', async () => {
    const owner = await h.signUp();
    await h.services.accounts.setPlan(owner.accountId, { expiration: h.clock.now() + 60_000 });
    const status = async () => (await h.request({ method: 'GET', url: '/v1.3/account/me', token: owner.access })).json().account.status;
    expect(await status()).toBe('active');
    h.clock.advance(59_999);
    expect(await status()).toBe('active');
    h.clock.advance(1);
    expect(await status()).toBe('expired');
    expect((await h.request({ method: 'GET', url: '/v1.2/me', token: owner.access })).json().account.status).toBe('expired');
  });
});
