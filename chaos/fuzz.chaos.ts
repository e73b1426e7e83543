import { afterAll, beforeAll, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from '../test/helpers/harness.js';
import { createLead, createManager, type ManagerFixture } from '../test/helpers/fixtures.js';
import { connectWidget } from '../test/widget-support.js';
import { FakeTelegram } from '../test/helpers/fake-telegram.js';
import { FakeViber } from '../test/helpers/fake-viber.js';
import { casesFor, operationsOf, urlOf, type FuzzCase, type OpenApiOperation } from './fuzz-cases.js';
import { figure, FULL, rng, SEED } from './support.js';

/**
 * Every operation of the OpenAPI document, under every version prefix, with schema-derived bad
 * input, as the owner and as a manager who reaches nothing. Any 5xx fails the run. Short mode
 * takes a seeded sample of the cases (CHAOS_SEED replays it); full mode takes them all.
 */
const SHORT_CASES = 3000;
/** Operations a fuzzer must not call with a plausible request (they end the fuzzer's own session). */
const SKIPPED = new Set(['DELETE /v1.3/auth/sessions']);

let h: Harness;
let owner: SignedUp;
let manager: ManagerFixture;
let visitorToken: string;
const providers: Array<{ close(): Promise<void> }> = [];

beforeAll(async () => {
  const telegram = await FakeTelegram.start();
  const viber = await FakeViber.start();
  providers.push(telegram, viber);
  h = await createHarness({
    env: {
      PARLEY_API_RATE_LIMIT: '0',
      PARLEY_LOGIN_MAX_PER_IP: '1000000',
      PARLEY_LOGIN_MAX_FAILURES: '1000000',
      PARLEY_WIDGET_SESSIONS_PER_IP: '1000000',
      PARLEY_WIDGET_MESSAGES_PER_MINUTE: '1000000',
      PARLEY_TELEGRAM_API_URL: telegram.url,
      PARLEY_VIBER_API_URL: viber.url,
      PARLEY_WEBHOOK_ALLOW_PRIVATE: '0',
    },
  });
  owner = await h.signUp();
  const widget = await connectWidget(h, owner);
  await createLead(h, owner.accountId, widget.id);
  manager = await createManager(h, owner, { sources: [null] });
  visitorToken = (await h.request({ method: 'POST', url: '/widget/v1/sessions', payload: { key: widget.key } })).json().token;
});

afterAll(async () => {
  await h?.close();
  await Promise.all(providers.map((p) => p.close()));
});

/** A fuzzed request may end up changing an actor (its sources, its login): sign in again when needed. */
async function tokenOf(actor: 'owner' | 'manager'): Promise<string> {
  const who = actor === 'owner' ? owner : manager;
  const me = await h.request({ method: 'GET', url: '/v1.3/account/me', token: who.access });
  if (me.statusCode === 200) return who.access;
  const login = await h.request({
    method: 'POST',
    url: '/v1.3/auth/login',
    payload: { login: who.login, pass: actor === 'owner' ? owner.pass : 'manager password' },
  });
  if (login.statusCode === 200) who.access = login.json().accessToken.token;
  return who.access;
}

it('answers no fuzzed request with a 5xx', async () => {
  const doc = h.app.swagger() as unknown as { paths: Record<string, Record<string, unknown>> };
  const ops = operationsOf(doc).filter((op) => !SKIPPED.has(`${op.method} ${op.path}`));
  const all: Array<{ op: OpenApiOperation; c: FuzzCase }> = ops.flatMap((op) => casesFor(op, '1').map((c) => ({ op, c })));
  const random = rng(SEED);
  const chosen = FULL ? all : all.filter(() => random() < SHORT_CASES / all.length / 2);
  const failures: string[] = [];
  let requests = 0;
  const started = performance.now();
  for (const actor of ['owner', 'manager'] as const) {
    let token = await tokenOf(actor);
    let lastOp: OpenApiOperation | undefined;
    for (const { op, c } of chosen) {
      if (op !== lastOp) {
        token = await tokenOf(actor);
        lastOp = op;
      }
      const bearer = op.path.startsWith('/widget/v1') ? visitorToken : token;
      const res = await h.app.inject({
        method: op.method as 'GET',
        url: urlOf(op, c),
        headers: { authorization: `Bearer ${bearer}`, ...(c.contentType ? { 'content-type': c.contentType } : {}) },
        payload: c.payload,
      });
      requests++;
      if (res.statusCode >= 500)
        failures.push(`${actor} ${op.method} ${urlOf(op, c).slice(0, 120)} [${c.label}] -> ${res.statusCode} ${res.body.slice(0, 200)}`);
    }
  }
  figure('fuzz', 'operations', ops.length);
  figure('fuzz', 'requests fuzzed', requests);
  figure('fuzz', '5xx', failures.length);
  figure('fuzz', 'seconds', Math.round((performance.now() - started) / 100) / 10);
  expect(failures, failures.slice(0, 20).join('\n')).toEqual([]);
  expect(requests).toBeGreaterThan(FULL ? 10_000 : 1000);
});
