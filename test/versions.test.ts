import { Writable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { Type } from 'typebox';
import { buildApp } from '../src/app.js';
import { createHarness, type Harness } from './helpers/harness.js';
import { API_ROUTES } from '../src/api/routes/index.js';
import { ALL, defineRoute } from '../src/api/route.js';
import { IdParams } from '../src/api/schemas/common.js';
import { API_VERSIONS, type ApiVersion } from '../src/api/versions.js';

// Routes that exist only in this file, to exercise the HTTP rules of docs/api/README.md, docs/api/errors.md, §10, §11
// without depending on any one area's routes.
const seen = { echo: 0, touch: 0, lastEchoBody: undefined as unknown };
const SECRET_MESSAGE = 'connection to db-internal-7:5432 failed, password=hunter2';

const EchoBody = Type.Object({ title: Type.String({ maxLength: 20 }), n: Type.Optional(Type.Integer()) });

const testRoutes = [
  defineRoute({
    versions: ALL,
    method: 'POST',
    url: '/echo',
    auth: 'none',
    schema: { body: EchoBody },
    handler: async (req) => {
      seen.echo++;
      seen.lastEchoBody = req.body;
      return { title: req.body.title, n: req.body.n ?? null };
    },
  }),
  defineRoute({
    versions: ALL,
    method: 'GET',
    url: '/things/:id',
    auth: 'none',
    schema: { params: IdParams },
    handler: async (req) => ({ id: req.params.id }),
  }),
  defineRoute({
    versions: ALL,
    method: 'POST',
    url: '/touch',
    auth: 'none',
    optionalBody: true,
    schema: { body: Type.Object({ note: Type.Optional(Type.String()) }) },
    handler: async (req) => {
      seen.touch++;
      return { note: req.body.note ?? null };
    },
  }),
  defineRoute({
    versions: ALL,
    method: 'GET',
    url: '/boom',
    auth: 'none',
    schema: {},
    handler: async () => {
      throw new Error(SECRET_MESSAGE);
    },
  }),
];

let h: Harness;
beforeAll(async () => {
  h = await createHarness({ routes: [...API_ROUTES, ...testRoutes] });
});
afterAll(() => h.close());
beforeEach(() => {
  seen.echo = 0;
  seen.touch = 0;
  seen.lastEchoBody = undefined;
});

const CURRENT = ['v1.2', 'v1.3'] as const;

const postJson = (url: string, payload: unknown) =>
  h.request({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(payload) });
const postRaw = (url: string, contentType: string, body: string | Buffer) =>
  h.request({ method: 'POST', url, headers: { 'content-type': contentType }, body });

/** The v1.1 body is exactly `{statusCode, message}` (plus `requestId` on 5xx only). */
function expectLegacyError(body: Record<string, unknown>, status: number) {
  expect(Object.keys(body).sort()).toEqual(status >= 500 ? ['message', 'requestId', 'statusCode'] : ['message', 'statusCode']);
  expect(body.statusCode).toBe(status);
  expect(typeof body.message).toBe('string');
  expect((body.message as string).length).toBeGreaterThan(0);
}

/** The v1.2/v1.3 body: `{error, code, details?}` and nothing of the legacy shape. */
function expectCurrentError(body: Record<string, unknown>, code: string) {
  expect(typeof body.error).toBe('string');
  expect((body.error as string).length).toBeGreaterThan(0);
  expect(body.code).toBe(code);
  expect(body).not.toHaveProperty('statusCode');
  expect(body).not.toHaveProperty('message');
  for (const key of Object.keys(body)) expect(['error', 'code', 'details', 'requestId']).toContain(key);
}

describe('error body per version (§3, §10)', () => {
  it('v1.1 answers {statusCode, message}; v1.2 and v1.3 answer {error, code, details} with field paths', async () => {
    const legacy = await postJson('/v1.1/echo', { title: 'x'.repeat(21) });
    expect(legacy.statusCode).toBe(400);
    expectLegacyError(legacy.json(), 400);

    for (const v of CURRENT) {
      const res = await postJson(`/${v}/echo`, { title: 'x'.repeat(21) });
      expect(res.statusCode, v).toBe(400);
      const body = res.json();
      expectCurrentError(body, 'validation_failed');
      expect(body.details).toEqual([{ path: 'body.title', message: expect.any(String) }]);
    }
  });

  it('names a missing required field by its path', async () => {
    const res = await postJson('/v1.3/echo', { n: 1 });
    expect(res.statusCode).toBe(400);
    expect(res.json().details).toEqual([{ path: 'body.title', message: 'is required' }]);
  });

  it('answers 401 in each version’s format on an authenticated route without a token', async () => {
    const legacy = await h.request({ method: 'GET', url: '/v1.1/me' });
    expect(legacy.statusCode).toBe(401);
    expectLegacyError(legacy.json(), 401);
    const v12 = await h.request({ method: 'GET', url: '/v1.2/me' });
    expect(v12.statusCode).toBe(401);
    expectCurrentError(v12.json(), 'unauthorized');
    const v13 = await h.request({ method: 'GET', url: '/v1.3/account/me' });
    expect(v13.statusCode).toBe(401);
    expectCurrentError(v13.json(), 'unauthorized');
  });
});

describe('unknown routes (§3, §10)', () => {
  it('answer 404 JSON in each version’s format', async () => {
    const legacy = await h.request({ method: 'GET', url: '/v1.1/no/such/thing' });
    expect(legacy.statusCode).toBe(404);
    expect(legacy.headers['content-type']).toMatch(/^application\/json/);
    expectLegacyError(legacy.json(), 404);
    for (const v of CURRENT) {
      const res = await h.request({ method: 'POST', url: `/${v}/no/such/thing`, payload: {} });
      expect(res.statusCode, v).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expectCurrentError(res.json(), 'not_found');
    }
  });

  it('answer 404 JSON outside the versioned prefixes too', async () => {
    for (const url of ['/nope', '/v1.4/account/me', '/v2/leads', '/v1.3x/me']) {
      const res = await h.request({ method: 'GET', url });
      expect(res.statusCode, url).toBe(404);
      expect(res.headers['content-type'], url).toMatch(/^application\/json/);
      expectCurrentError(res.json(), 'not_found');
    }
  });

  it('answer 404 for a route of one version requested under another', async () => {
    // /echo is everywhere, /account/me only in v1.3 and /me only in v1.1 and v1.2 (§10 account info).
    const owner = await h.signUp();
    expect((await h.request({ method: 'GET', url: '/v1.3/me', token: owner.access })).statusCode).toBe(404);
    expect((await h.request({ method: 'GET', url: '/v1.1/account/me', token: owner.access })).statusCode).toBe(404);
  });
});

describe('form-urlencoded bodies (§10)', () => {
  it('are accepted on v1.1, with text values coerced to the schema types', async () => {
    const res = await postRaw('/v1.1/echo', 'application/x-www-form-urlencoded', 'title=hello+world&n=5');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ title: 'hello world', n: 5 });
    expect(seen.lastEchoBody).toEqual({ title: 'hello world', n: 5 });
  });

  it('are validated on v1.1 like JSON bodies (a non-integer n is 400)', async () => {
    const res = await postRaw('/v1.1/echo', 'application/x-www-form-urlencoded', 'title=hi&n=five');
    expect(res.statusCode).toBe(400);
    expectLegacyError(res.json(), 400);
    expect(seen.echo).toBe(0);
  });

  it('answer 415 unsupported_media_type on v1.2 and v1.3, and the handler never runs', async () => {
    for (const v of CURRENT) {
      const res = await postRaw(`/${v}/echo`, 'application/x-www-form-urlencoded', 'title=hello&n=5');
      expect(res.statusCode, v).toBe(415);
      expectCurrentError(res.json(), 'unsupported_media_type');
    }
    expect(seen.echo).toBe(0);
  });
});

describe('JSON bodies (§3, §11)', () => {
  it('are not coerced on v1.2 and v1.3: a string where an integer belongs is 400', async () => {
    for (const v of CURRENT) {
      const res = await postJson(`/${v}/echo`, { title: 'hi', n: '5' });
      expect(res.statusCode, v).toBe(400);
      expect(res.json().details).toEqual([{ path: 'body.n', message: expect.any(String) }]);
      const wrongString = await postJson(`/${v}/echo`, { title: 42 });
      expect(wrongString.statusCode, v).toBe(400);
      expect(wrongString.json().details[0].path).toBe('body.title');
    }
    expect(seen.echo).toBe(0);
  });

  it('with the right types pass on every version', async () => {
    for (const v of API_VERSIONS) {
      const res = await postJson(`/${v}/echo`, { title: 'hi', n: 7 });
      expect(res.statusCode, v).toBe(200);
      expect(res.json()).toEqual({ title: 'hi', n: 7 });
    }
    expect(seen.echo).toBe(3);
  });

  it('that are malformed answer 400 in each version’s format', async () => {
    for (const v of API_VERSIONS) {
      const res = await postRaw(`/${v}/echo`, 'application/json', '{"title": "hi",');
      expect(res.statusCode, v).toBe(400);
      if (v === 'v1.1') expectLegacyError(res.json(), 400);
      else expectCurrentError(res.json(), 'validation_failed');
    }
    expect(seen.echo).toBe(0);
  });

  it('over the 1 MiB limit answer 413, under it pass', async () => {
    // The title is too long for the schema on purpose: a 413 must come before validation.
    const big = JSON.stringify({ title: 'x', pad: 'y'.repeat(1024 * 1024) });
    expect(Buffer.byteLength(big)).toBeGreaterThan(1024 * 1024);
    for (const v of API_VERSIONS) {
      const res = await postRaw(`/${v}/echo`, 'application/json', big);
      expect(res.statusCode, v).toBe(413);
      if (v === 'v1.1') expectLegacyError(res.json(), 413);
      else expectCurrentError(res.json(), 'payload_too_large');
    }
    const form = await postRaw('/v1.1/echo', 'application/x-www-form-urlencoded', `title=x&pad=${'y'.repeat(1024 * 1024)}`);
    expect(form.statusCode).toBe(413);
    expect(seen.echo).toBe(0);

    const justUnder = JSON.stringify({ title: 'x', pad: 'y'.repeat(1024 * 1024 - 64) });
    expect(Buffer.byteLength(justUnder)).toBeLessThanOrEqual(1024 * 1024);
    expect((await postRaw('/v1.3/echo', 'application/json', justUnder)).statusCode).toBe(200);
  });

  it('may be empty with Content-Type: application/json where the body is optional, on every version', async () => {
    for (const v of API_VERSIONS) {
      const empty = await postRaw(`/${v}/touch`, 'application/json', '');
      expect(empty.statusCode, v).toBe(200);
      expect(empty.json()).toEqual({ note: null });
      const none = await h.request({ method: 'POST', url: `/${v}/touch` });
      expect(none.statusCode, v).toBe(200);
      const given = await postJson(`/${v}/touch`, { note: 'n' });
      expect(given.json(), v).toEqual({ note: 'n' });
    }
    expect(seen.touch).toBe(9);
  });

  it('may not be empty where the body is required', async () => {
    for (const v of API_VERSIONS) {
      const res = await postRaw(`/${v}/echo`, 'application/json', '');
      expect(res.statusCode, v).toBe(400);
      const none = await h.request({ method: 'POST', url: `/${v}/echo` });
      expect(none.statusCode, v).toBe(400);
    }
    expect(seen.echo).toBe(0);
  });

  it('ignore unknown fields, whatever their type', async () => {
    for (const v of API_VERSIONS) {
      const res = await postJson(`/${v}/echo`, { id: 77, title: 'hi', extra: { deep: true }, n: 1, list: [null] });
      expect(res.statusCode, v).toBe(200);
      expect(res.json()).toEqual({ title: 'hi', n: 1 });
      expect(seen.lastEchoBody, v).toMatchObject({ title: 'hi', n: 1 });
    }
    expect(seen.echo).toBe(3);
  });

  it('with an overlong string answer 400 and never reach the handler', async () => {
    for (const v of API_VERSIONS) {
      const res = await postJson(`/${v}/echo`, { title: 'x'.repeat(21) });
      expect(res.statusCode, v).toBe(400);
    }
    expect(seen.echo).toBe(0);
    expect((await postJson('/v1.3/echo', { title: 'x'.repeat(20) })).statusCode).toBe(200);
    expect(seen.echo).toBe(1);
  });
});

describe('path parameters (§3, §10)', () => {
  const expected: Record<ApiVersion, number> = { 'v1.1': 404, 'v1.2': 404, 'v1.3': 400 };

  it('a valid id passes on every version', async () => {
    for (const v of API_VERSIONS) {
      const res = await h.request({ method: 'GET', url: `/${v}/things/42` });
      expect(res.statusCode, v).toBe(200);
      expect(res.json()).toEqual({ id: 42 });
    }
  });

  it('a non-integer id is 400 on v1.3 and 404 on v1.1 and v1.2', async () => {
    for (const bad of ['abc', '1.5', '0', '-3', '12abc', '99999999999999999999']) {
      for (const v of API_VERSIONS) {
        const res = await h.request({ method: 'GET', url: `/${v}/things/${bad}` });
        expect(res.statusCode, `${v} ${bad}`).toBe(expected[v]);
        if (v === 'v1.1') expectLegacyError(res.json(), 404);
        else if (v === 'v1.2') expectCurrentError(res.json(), 'not_found');
        else {
          expectCurrentError(res.json(), 'validation_failed');
          expect(res.json().details[0].path).toBe('params.id');
        }
      }
    }
  });
});

describe('trailing slash (§1)', () => {
  it('is accepted on every path', async () => {
    const owner = await h.signUp();
    const plain = await h.request({ method: 'GET', url: '/v1.3/account/me', token: owner.access });
    const slashed = await h.request({ method: 'GET', url: '/v1.3/account/me/', token: owner.access });
    expect(slashed.statusCode).toBe(200);
    expect(slashed.json()).toEqual(plain.json());
    expect((await h.request({ method: 'GET', url: '/v1.1/me/', token: owner.access })).statusCode).toBe(200);
    expect((await h.request({ method: 'GET', url: '/v1.2/things/5/' })).json()).toEqual({ id: 5 });
    expect((await postJson('/v1.3/echo/', { title: 'slash' })).statusCode).toBe(200);
    expect((await h.request({ method: 'GET', url: '/health/' })).statusCode).toBe(200);
  });
});

describe('500 answers (§3)', () => {
  it('carry the request id of the x-request-id header and leak no internals', async () => {
    const ids = new Set<string>();
    for (const v of API_VERSIONS) {
      const res = await h.request({ method: 'GET', url: `/${v}/boom` });
      expect(res.statusCode, v).toBe(500);
      const header = res.headers['x-request-id'];
      expect(typeof header).toBe('string');
      const body = res.json();
      expect(body.requestId).toBe(header);
      expect(res.body).not.toContain('hunter2');
      expect(res.body).not.toContain('db-internal');
      expect(res.body).not.toMatch(/stack|at .*\.ts:\d+/);
      if (v === 'v1.1') expectLegacyError(body, 500);
      else expectCurrentError(body, 'internal_error');
      ids.add(body.requestId);
    }
    // A fresh id per request.
    expect(ids.size).toBe(3);
  });

  it('carry a request id that the log line of the failure also has, with the internals kept in the log', async () => {
    const lines: Array<Record<string, any>> = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const logged = await buildApp({ services: h.services, logger: pino({ level: 'info' }, sink), routes: testRoutes });
    try {
      const res = await logged.inject({ method: 'GET', url: '/v1.3/boom' });
      expect(res.statusCode).toBe(500);
      const requestId = res.json().requestId;
      const entry = lines.find((l) => l.level >= 50 && l.reqId === requestId);
      expect(entry, JSON.stringify(lines)).toBeDefined();
      expect(JSON.stringify(entry)).toContain('hunter2');
    } finally {
      await logged.close();
    }
  });

  it('do not trust a request id sent by the client', async () => {
    const res = await h.request({ method: 'GET', url: '/v1.3/boom', headers: { 'x-request-id': 'client-chosen' } });
    expect(res.json().requestId).not.toBe('client-chosen');
    expect(res.json().requestId).toBe(res.headers['x-request-id']);
  });
});
