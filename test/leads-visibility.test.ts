import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createLead, createManager, type ManagerFixture } from './helpers/fixtures.js';
import { statusesOf } from './helpers/leads-seed.js';
import { statementCounter } from './helpers/statements.js';
import { DIALECT } from './helpers/database.js';
import type { StatusRow } from '../src/db/schema.js';
import { findVisibleLead, type Scope } from '../src/domain/policy/policy.js';

/**
 * docs/api/auth.md: a manager sees the leads of the integrations in its `sources` (none listed: all;
 * one record with saId null: none); within them all leads with `allowAllDeals`, otherwise its own,
 * the unassigned inbox and those of `allowedUsers`. Everything else answers 404 and stays unchanged.
 */

let h: Harness;
let owner: SignedUp;
let other: SignedUp;
let statuses: StatusRow[];
const L: Record<string, number> = {};
/** The channel of each lead in L. */
const S: Record<string, number> = {};
let M: Record<'src' | 'srcAll' | 'allDeals' | 'ownOnly' | 'allowed' | 'none', ManagerFixture>;
let otherLead: number;
/** The owner's widget integration (a*) and its other one (b*). */
let A: number;

beforeAll(async () => {
  h = await createHarness({ env: { PARLEY_LOGIN_MAX_PER_IP: '100000' } });
  owner = await h.signUp();
  other = await h.signUp();
  A = await createIntegration(h, owner.accountId, 'widget');
  const B = await createIntegration(h, owner.accountId, 'msgra');
  statuses = await statusesOf(h, owner.accountId);
  const ownOnly = await createManager(h, owner);
  M = {
    ownOnly,
    src: await createManager(h, owner, { sources: [A] }),
    srcAll: await createManager(h, owner, { sources: [A], allowAllDeals: true }),
    allDeals: await createManager(h, owner, { allowAllDeals: true }),
    allowed: await createManager(h, owner, { allowedUsers: [ownOnly.userId] }),
    none: await createManager(h, owner, { sources: [null], allowAllDeals: true }),
  };
  const active = statuses.find((s) => s.type === 'active')!;
  const completed = statuses.find((s) => s.type === 'completed')!;
  const lead = async (name: string, integration: number, userId: number | null, status: StatusRow | null) => {
    h.clock.advance(1000);
    const made = await createLead(h, owner.accountId, integration, {
      userId,
      statusId: status?.id ?? null,
      statusType: status?.type ?? 'inbox',
    });
    L[name] = made.leadId;
    S[name] = made.sourceId;
  };
  await lead('a1', A, null, null);
  await lead('a2', A, M.src.userId, active);
  await lead('a3', A, M.ownOnly.userId, active);
  await lead('a4', A, M.srcAll.userId, null);
  await lead('b1', B, null, null);
  await lead('b2', B, M.ownOnly.userId, completed);
  await lead('b3', B, owner.userId, active);
  otherLead = (await createLead(h, other.accountId, await createIntegration(h, other.accountId))).leadId;
});
afterAll(() => h.close());

const EXPECTED: Record<string, string[]> = {
  owner: ['a1', 'a2', 'a3', 'a4', 'b1', 'b2', 'b3'],
  src: ['a1', 'a2'],
  srcAll: ['a1', 'a2', 'a3', 'a4'],
  allDeals: ['a1', 'a2', 'a3', 'a4', 'b1', 'b2', 'b3'],
  ownOnly: ['a1', 'a3', 'b1', 'b2'],
  allowed: ['a1', 'a3', 'b1', 'b2'],
  none: [],
};
const token = (who: string) => (who === 'owner' ? owner.access : M[who as keyof typeof M].access);
const names = (ids: number[]) => ids.map((id) => Object.keys(L).find((k) => L[k] === id)).sort();
const leadRow = (id: number) => h.database.db.kysely.selectFrom('leads').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

describe('lead visibility', () => {
  for (const who of Object.keys(EXPECTED)) {
    it(`${who}: lists, funnel and statistics show exactly its leads`, async () => {
      const res = await h.request({ method: 'GET', url: '/v1.3/leads/all?ignore=true', token: token(who) });
      expect(names(res.json().map((l: { id: number }) => l.id))).toEqual(EXPECTED[who]);
      expect(res.headers['x-total-count']).toBe(String(EXPECTED[who].length));
      for (const v of ['v1.1', 'v1.2']) {
        const old = await h.request({ method: 'GET', url: `/${v}/leads/all`, token: token(who) });
        expect(names(old.json().map((l: { id: number }) => l.id))).toEqual(EXPECTED[who]);
      }
      const inbox = await h.request({ method: 'GET', url: '/v1.3/leads/inbox', token: token(who) });
      expect(names(inbox.json().map((l: { id: number }) => l.id))).toEqual(EXPECTED[who].filter((n) => ['a1', 'a4', 'b1'].includes(n)));
      const funnel = await h.request({ method: 'GET', url: '/v1.3/leads/funnel', token: token(who) });
      const inFunnel = funnel.json().flatMap((c: { leads: Array<{ id: number }> }) => c.leads.map((l) => l.id));
      expect(names(inFunnel)).toEqual(EXPECTED[who].filter((n) => ['a2', 'a3', 'b2', 'b3'].includes(n)));
      const byId = await h.request({
        method: 'GET',
        url: `/v1.3/leads?${Object.values(L)
          .map((id) => `id=${id}`)
          .join('&')}&id=${otherLead}`,
        token: token(who),
      });
      expect(names(byId.json().map((l: { id: number }) => l.id))).toEqual(EXPECTED[who]);
      const stats = await h.request({ method: 'GET', url: '/v1.3/leads/statistics', token: token(who) });
      expect(stats.json().lists.all).toBe(EXPECTED[who].length);
    });

    it(`${who}: reads, edits, reads-marks and tags only the leads it sees; others are 404 and unchanged`, async () => {
      for (const name of Object.keys(L)) {
        const id = L[name];
        const sees = EXPECTED[who].includes(name);
        const before = await leadRow(id);
        const get = await h.request({ method: 'GET', url: `/v1.3/leads/${id}`, token: token(who) });
        expect(get.statusCode, `${who} GET ${name}`).toBe(sees ? 200 : 404);
        // The history page finds the lead, its integration and channel in one query of its own.
        for (const cursor of [undefined, -1]) {
          const payload = cursor === undefined ? {} : { cursor };
          const page = await h.request({ method: 'POST', url: `/v1.3/messaging/${id}/history/${S[name]}`, token: token(who), payload });
          expect(page.statusCode, `${who} history ${name} ${cursor}`).toBe(sees ? 200 : 404);
          if (!sees) expect(page.json().error).toBe('Lead not found');
        }
        if (!sees) {
          const tries = [
            { method: 'PUT' as const, url: `/v1.3/leads/${id}`, payload: { details: `by ${who}` } },
            { method: 'PUT' as const, url: `/v1.3/leads/${id}/read`, payload: {} },
            { method: 'PUT' as const, url: `/v1.3/leads/${id}/accept`, payload: { userId: owner.userId } },
            { method: 'POST' as const, url: `/v1.3/tags/${id}/seen-by-${who}` },
            { method: 'DELETE' as const, url: `/v1.3/tags/${id}/seen-by-${who}` },
          ];
          for (const t of tries) {
            const res = await h.request({ ...t, token: token(who) });
            expect(res.statusCode, `${who} ${t.method} ${t.url}`).toBe(404);
          }
          expect(await leadRow(id)).toEqual(before);
        }
      }
      for (const name of EXPECTED[who]) {
        const res = await h.request({ method: 'PUT', url: `/v1.3/leads/${L[name]}`, token: token(who), payload: { ttn: `ttn-${who}` } });
        expect(res.statusCode, `${who} PUT ${name}`).toBe(200);
        const tag = await h.request({ method: 'POST', url: `/v1.2/tags/${L[name]}/checked`, token: token(who) });
        expect(tag.json()).toContain('checked');
      }
    });
  }

  it("nobody reaches another account's lead", async () => {
    for (const who of Object.keys(EXPECTED)) {
      expect((await h.request({ method: 'GET', url: `/v1.3/leads/${otherLead}`, token: token(who) })).statusCode).toBe(404);
      const page = await h.request({ method: 'POST', url: `/v1.3/messaging/${otherLead}/history/${S.a1}`, token: token(who), payload: {} });
      expect(page.statusCode).toBe(404);
      expect(
        (await h.request({ method: 'PUT', url: `/v1.3/leads/${otherLead}/accept`, token: token(who), payload: { userId: owner.userId } }))
          .statusCode,
      ).toBe(404);
    }
  });

  if (DIALECT === 'postgres') {
    it('reads the leads asked for in one turn in one statement, each reader getting its own copy of what it may see', async () => {
      // docs/performance.md: outside a transaction, single-lead reads
      // share a statement; who may see a lead is then checked in memory by the same rule.
      const { counter, statements, reset } = statementCounter();
      const db = h.database.db.kysely.withPlugin(counter);
      const scopes: Record<string, { scope: Scope; sees: string[] }> = {
        owner: { scope: { accountId: owner.accountId, integrations: 'all', leads: 'all' }, sees: EXPECTED.owner },
        src: {
          scope: { accountId: owner.accountId, integrations: [A], leads: { self: M.src.userId, allowedUsers: [] } },
          sees: EXPECTED.src,
        },
        ownOnly: {
          scope: { accountId: owner.accountId, integrations: 'all', leads: { self: M.ownOnly.userId, allowedUsers: [] } },
          sees: EXPECTED.ownOnly,
        },
        other: { scope: { accountId: other.accountId, integrations: 'all', leads: 'all' }, sees: ['other'] },
      };
      const ids: Record<string, number> = { ...L, other: otherLead, missing: otherLead + 1_000_000, beyondBigint: 2 ** 63 };
      const asks = Object.values(scopes).flatMap(({ scope, sees }) =>
        Object.entries(ids).map(([name, id]) => ({ scope, id, sees: sees.includes(name) })),
      );
      reset();
      const found = await Promise.all(asks.map((ask) => findVisibleLead(db, ask.scope, ask.id)));
      expect(statements()).toBe(1);
      expect(found.map((lead) => lead?.id)).toEqual(asks.map((ask) => (ask.sees ? ask.id : undefined)));
      const [first, again] = found.filter((lead) => lead?.id === L.a1);
      expect(first).toEqual(await leadRow(L.a1));
      expect(again).toEqual(first);
      expect(again).not.toBe(first);
    });
  }

  it('a manager may accept a lead it sees for itself or for a colleague, and loses sight of it when it is no longer its own', async () => {
    const A = (await leadRow(L.a1)).integration_id;
    const fresh = (await createLead(h, owner.accountId, A)).leadId;
    const res = await h.request({
      method: 'PUT',
      url: `/v1.3/leads/${fresh}/accept`,
      token: M.src.access,
      payload: { userId: M.ownOnly.userId },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().userId).toBe(M.ownOnly.userId);
    expect((await h.request({ method: 'GET', url: `/v1.3/leads/${fresh}`, token: M.src.access })).statusCode).toBe(404);
    expect((await h.request({ method: 'GET', url: `/v1.3/leads/${fresh}`, token: M.ownOnly.access })).statusCode).toBe(200);
  });
});
