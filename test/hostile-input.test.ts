import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createLead } from './helpers/fixtures.js';
import { connectWidget, widgetSnapshot } from './widget-support.js';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from '../src/domain/json-limits.js';
import { Type } from 'typebox';
import { sql } from 'kysely';
import { defineRoute, V13 } from '../src/api/route.js';
import { AUTH_BODY_LIMIT, CHANNEL_WEBHOOK_BODY_LIMIT, VISITOR_BODY_LIMIT } from '../src/api/body-limits.js';

/**
 * What a hostile caller sends before or after signing in: deep nesting, oversized bodies, NUL
 * characters and numbers beyond bigint. Every one answers the documented 4xx, on both databases,
 * and changes nothing.
 */
let h: Harness;
let owner: SignedUp;
let widgetKey: string;
let port: number;
beforeAll(async () => {
  h = await createHarness({ env: { PARLEY_UPLOAD_LIMIT: String(1024 * 1024), PARLEY_LOGIN_MAX_PER_IP: '10000' } });
  owner = await h.signUp();
  widgetKey = (await connectWidget(h, owner)).key;
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  port = (h.app.server.address() as AddressInfo).port;
});
afterAll(() => h.close());

const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
const json = { 'content-type': 'application/json' };

describe('JSON nesting depth', () => {
  it('is measured like the parser would, strings and escapes included (property)', () => {
    const depthOf = (v: unknown): number =>
      Array.isArray(v)
        ? 1 + Math.max(0, ...v.map(depthOf))
        : v && typeof v === 'object'
          ? 1 + Math.max(0, ...Object.values(v).map(depthOf))
          : 0;
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 9 }), (value, max) => {
        expect(exceedsJsonDepth(JSON.stringify(value), max)).toBe(depthOf(value) > max);
      }),
    );
    expect(exceedsJsonDepth(JSON.stringify({ a: '[[[[{{{{\\"]]' }), 1)).toBe(false);
  });

  it('is refused with 400 beyond 64 levels, before authentication costs anything', async () => {
    const ok = await h.request({
      method: 'POST',
      url: '/v1.3/auth/login',
      headers: json,
      payload: `{"login":${nested(MAX_JSON_DEPTH - 1)}}`,
    });
    expect(ok.statusCode).toBe(400);
    expect(ok.json().code).toBe('validation_failed');
    const started = performance.now();
    for (const url of ['/v1.3/auth/login', '/widget/v1/sessions', '/v1.3/leads']) {
      const res = await h.request({ method: 'POST', url, headers: json, payload: `{"a":${nested(5000)}}`, token: owner.access });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatch(/nested deeper than 64/);
    }
    // A 1 MB body of 500,000 levels once cost over a second of CPU; the pre-scan stops at level 65.
    const deep = nested(8 * 1024 - 8);
    const res = await h.request({ method: 'POST', url: '/v1.3/leads', headers: json, payload: deep, token: owner.access });
    expect(res.statusCode).toBe(400);
    expect(performance.now() - started).toBeLessThan(2000);
  });
});

describe('body limits of the routes anyone may call', () => {
  const big = (bytes: number) => JSON.stringify({ login: 'x'.repeat(bytes), pass: 'y' });
  it('answer 413 above what they take', async () => {
    expect((await h.request({ method: 'POST', url: '/v1.3/auth/login', headers: json, payload: big(AUTH_BODY_LIMIT) })).statusCode).toBe(
      413,
    );
    expect((await h.request({ method: 'POST', url: '/v1.3/auth/tokens', headers: json, payload: big(AUTH_BODY_LIMIT) })).statusCode).toBe(
      413,
    );
    const session = JSON.stringify({ key: widgetKey, name: 'n'.repeat(VISITOR_BODY_LIMIT) });
    expect((await h.request({ method: 'POST', url: '/widget/v1/sessions', headers: json, payload: session })).statusCode).toBe(413);
    const integration = await createIntegration(h, owner.accountId, 'msgrb_bot', 'bot');
    const update = JSON.stringify({ update_id: 1, filler: 'z'.repeat(CHANNEL_WEBHOOK_BODY_LIMIT) });
    const hook = await h.request({ method: 'POST', url: `/channels/telegram/${integration}`, headers: json, payload: update });
    expect(hook.statusCode).toBe(413);
  });

  it('still take what they are for', async () => {
    const session = await h.request({ method: 'POST', url: '/widget/v1/sessions', headers: json, payload: { key: widgetKey } });
    expect(session.statusCode).toBe(200);
    const say = await h.request({
      method: 'POST',
      url: '/widget/v1/messages',
      headers: { ...json, authorization: `Bearer ${session.json().token}` },
      // 4,000 characters that JSON escapes as \uXXXX: the largest message a visitor may send.
      payload: JSON.stringify({ clientId: 'largest', text: `${'\u0001'.repeat(3999)}a` }).replace(/\\u0001/g, '\\u00e9'),
    });
    expect(say.statusCode).toBe(200);
  });
});

/** Sends only the headers of a request and reads the answer: proof that no body byte was awaited. */
function headersOnly(path: string, headers: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk) => {
      answer += chunk.toString('latin1');
      // The status line and headers are enough; a 401 may keep the connection open for the body.
      if (answer.includes('\r\n\r\n')) {
        socket.destroy();
        resolve(answer);
      }
    });
    socket.on('end', () => resolve(answer));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
    const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}`);
    socket.write([`POST ${path} HTTP/1.1`, `host: 127.0.0.1:${port}`, ...lines, '', ''].join('\r\n'));
  });
}

describe('uploads with a declared Content-Length over the limit', () => {
  it('are refused with 413 before any byte of the body is read, and the connection closes', async () => {
    const answer = await headersOnly('/v1.3/messaging/upload', {
      authorization: `Bearer ${owner.access}`,
      'content-type': 'multipart/form-data; boundary=x',
      'content-length': String(50 * 1024 * 1024),
    });
    expect(answer).toMatch(/^HTTP\/1\.1 413/);
    expect(answer.toLowerCase()).toContain('connection: close');
    const token = (await h.request({ method: 'POST', url: '/widget/v1/sessions', headers: json, payload: { key: widgetKey } })).json()
      .token;
    const visitor = await headersOnly('/widget/v1/uploads', {
      authorization: `Bearer ${token}`,
      'content-type': 'multipart/form-data; boundary=x',
      'content-length': String(1024 * 1024 * 1024),
    });
    expect(visitor).toMatch(/^HTTP\/1\.1 413/);
  });

  it('still answer 401 first without a token', async () => {
    const answer = await headersOnly('/v1.3/messaging/upload', {
      'content-type': 'multipart/form-data; boundary=x',
      'content-length': '999999999',
    });
    expect(answer).toMatch(/^HTTP\/1\.1 401/);
  });
});

describe('NUL characters and numbers beyond bigint', () => {
  it('answer 400 on anonymous routes, widget messages and authenticated ones, storing nothing', async () => {
    const before = await widgetSnapshot(h);
    const login = await h.request({
      method: 'POST',
      url: '/v1.3/auth/login',
      headers: json,
      payload: JSON.stringify({ login: 'a\u0000b@example.com', pass: 'x' }),
    });
    expect(login.statusCode).toBe(400);
    expect(login.json().details[0].path).toBe('body.login');
    const token = (await h.request({ method: 'POST', url: '/widget/v1/sessions', headers: json, payload: { key: widgetKey } })).json()
      .token;
    const after = await widgetSnapshot(h);
    const say = await h.request({
      method: 'POST',
      url: '/widget/v1/messages',
      headers: { ...json, authorization: `Bearer ${token}` },
      payload: JSON.stringify({ clientId: 'nul', text: 'hello\u0000there' }),
    });
    expect(say.statusCode).toBe(400);
    expect(await widgetSnapshot(h)).toEqual(after);
    expect(after.messages).toBe(before.messages);

    const integration = await createIntegration(h, owner.accountId, 'widget', 'nul-shop');
    const lead = await createLead(h, owner.accountId, integration);
    for (const version of ['v1.1', 'v1.2', 'v1.3']) {
      const huge = await h.request({
        method: 'PUT',
        url: `/${version}/leads/${lead.leadId}`,
        token: owner.access,
        headers: json,
        payload: '{"statusId": 1e308}',
      });
      expect(huge.statusCode).toBe(400);
      const nul = await h.request({
        method: 'PUT',
        url: `/${version}/leads/${lead.leadId}`,
        token: owner.access,
        payload: { details: 'a\u0000' },
      });
      expect(nul.statusCode).toBe(400);
    }
    for (const query of ['offset=1e300', 'limit=1e300']) {
      expect((await h.request({ method: 'GET', url: `/v1.3/leads?${query}`, token: owner.access })).statusCode).toBe(400);
    }
    const search = await h.request({ method: 'POST', url: '/v1.3/search/customers', token: owner.access, payload: { q: 'ab\u0000c' } });
    expect(search.statusCode).toBe(400);
  });

  it('a value the database refuses anyway is a 400, never a 500 (safety net)', async () => {
    // A route that hands the database a value no validation looked at (as a raw provider webhook does).
    const probe = defineRoute({
      versions: V13,
      method: 'POST',
      url: '/probe/store',
      auth: 'none',
      schema: { body: Type.Object({}, { additionalProperties: true }) },
      handler: async (req) => {
        const { text, number } = req.body as { text?: string; number?: string };
        if (text !== undefined) await sql`select cast(${text} as text) as t`.execute(probeHarness.database.db.kysely);
        if (number !== undefined) await sql`select cast(${number} as bigint) as n`.execute(probeHarness.database.db.kysely);
        return {};
      },
    });
    const probeHarness = await createHarness({ routes: [probe] });
    try {
      const postgres = probeHarness.database.db.dialect === 'postgres';
      const store = (body: Record<string, string>) => probeHarness.request({ method: 'POST', url: '/v1.3/probe/store', payload: body });
      // JSON's own escape reaches the route intact; the hardened schema only covers declared strings.
      const nul = await store({ text: 'a\u0000b' });
      const big = await store({ number: '99999999999999999999999' });
      expect(nul.statusCode).toBe(postgres ? 400 : 200);
      if (postgres) {
        expect(nul.json().code).toBe('validation_failed');
        expect(big.statusCode).toBe(400);
      }
    } finally {
      await probeHarness.close();
    }
  });
});
