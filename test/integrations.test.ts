import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createLead, createManager } from './helpers/fixtures.js';
import { runRoleMatrix, type Actors, type MatrixCase } from './helpers/role-matrix.js';
import type { InjectOptions } from 'fastify';
import { API_VERSIONS } from '../src/api/versions.js';
import {
  ChannelFailedError,
  ChannelRejectedError,
  ChannelTimeoutError,
  type ChannelAdapter,
  type ChannelIntegration,
} from '../src/domain/channels/channel.js';
import { CredentialsCipher } from '../src/domain/integrations/credentials-cipher.js';
import { IntegrationsService } from '../src/domain/integrations/integrations.service.js';
import { ChannelRegistry } from '../src/domain/channels/registry.js';
import { loadConfig } from '../src/config.js';
import { findIntegrationOfType, findLiveIntegrationById } from '../src/domain/integrations/integrations.repo.js';
import { statementCounter } from './helpers/statements.js';
import { DIALECT } from './helpers/database.js';

const SECRET_TOKEN = 'bot-token-0f9e8d7c6b5a-very-secret';
const INTEGRATION_KEYS = ['avatar', 'externalId', 'id', 'identifier', 'login', 'status', 'type', 'url'];

let h: Harness;
let actors: Actors;
beforeAll(async () => {
  h = await createHarness();
  const owner = await h.signUp();
  actors = { owner, manager: await createManager(h, owner), other: await h.signUp() };
});
afterAll(() => h.close());

const db = () => h.database.db.kysely;

/**
 * A fake provider behind the adapter interface: the token decides what the provider says, as a
 * real one would for valid, revoked or unreachable credentials.
 */
const calls: { connect: ChannelIntegration[]; disconnect: ChannelIntegration[] } = { connect: [], disconnect: [] };
const fakeBot: ChannelAdapter = {
  type: 'msgrb_bot',
  async connect(integration) {
    calls.connect.push(integration);
    const token = integration.credentials.token;
    if (token === '1:refused') throw new ChannelRejectedError('Unauthorized: invalid token');
    if (token === '1:down') throw new ChannelFailedError('provider answered 503');
    if (token === '1:slow') throw new ChannelTimeoutError('no answer');
    return {
      login: 'shop_bot',
      externalId: '7715692646',
      identifier: 'bot-7715692646',
      avatar: 'https://provider.example/avatar/shop_bot.jpg',
      url: 'https://provider.example/shop_bot',
    };
  },
  async disconnect(integration) {
    calls.disconnect.push(integration);
    if (integration.credentials.token === '1:disconnect-fails') throw new ChannelFailedError('provider down');
  },
  async send() {
    throw new Error('not used here');
  },
};

async function connect(owner: SignedUp, body: object) {
  return h.request({ method: 'POST', url: '/v1.3/integrations', token: owner.access, payload: body });
}

async function list(token: string, version = 'v1.3') {
  const res = await h.request({ method: 'GET', url: `/${version}/integrations`, token });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as Array<Record<string, unknown>>;
}

async function events(accountId: number, type?: string) {
  let q = db().selectFrom('events').selectAll().where('account_id', '=', accountId);
  if (type) q = q.where('type', '=', type);
  return q.orderBy('id').execute();
}

async function integrationRow(id: number) {
  return db().selectFrom('integrations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

/** Everything an integration route may write, in every account. */
async function snapshot() {
  return {
    integrations: await db().selectFrom('integrations').selectAll().orderBy('id').execute(),
    events: await db().selectFrom('events').selectAll().orderBy('id').execute(),
  };
}

async function businessIntegration(accountId: number): Promise<number> {
  const row = await db()
    .insertInto('integrations')
    .values({
      account_id: accountId,
      type: 'msgra_business_api',
      login: 'crm-linked',
      settings: JSON.stringify({ businessSystems: ['crm', 'warehouse'] }),
      created_at: h.clock.now(),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

/** The role matrix of routes served only under v1.3 (runRoleMatrix asks every version). */
async function roleMatrixV13(cases: Array<Omit<MatrixCase, 'request'> & { request: () => Promise<InjectOptions> }>) {
  const tokens = { none: undefined, manager: actors.manager.access, other: actors.other.access, owner: actors.owner.access };
  for (const c of cases) {
    const req = await c.request();
    for (const actor of ['none', 'manager', 'other', 'owner'] as const) {
      const before = await snapshot();
      const res = await h.request({ ...req, token: tokens[actor] });
      expect(res.statusCode, `${c.label} as ${actor}: ${res.body}`).toBe(c.expect[actor]);
      if (res.statusCode >= 400) {
        expect(typeof res.json().code).toBe('string');
        expect(await snapshot(), `${c.label} as ${actor} changed nothing`).toEqual(before);
      }
    }
  }
}

describe('role matrix', () => {
  it('answers each role as docs/api/auth.md says, on every route and version', async () => {
    const { owner } = actors;
    const listed = await createIntegration(h, owner.accountId, 'widget');
    const mapped = await businessIntegration(owner.accountId);
    await runRoleMatrix(
      h,
      actors,
      [
        {
          label: 'GET /integrations',
          expect: { none: 401, manager: 200, other: 200, owner: 200 },
          request: async (v) => ({ method: 'GET', url: `/${v}/integrations` }),
        },
        {
          label: 'GET /integrations/<id>/mappings/users',
          expect: { none: 401, manager: 200, other: 404, owner: 200 },
          request: async (v) => ({ method: 'GET', url: `/${v}/integrations/${mapped}/mappings/users` }),
        },
        {
          label: 'PUT /integrations/<id>/mappings/users',
          expect: { none: 401, manager: 403, other: 404, owner: 200 },
          request: async (v) => ({
            method: 'PUT',
            url: `/${v}/integrations/${mapped}/mappings/users`,
            payload: { 'crm-1': owner.userId },
          }),
        },
      ],
      snapshot,
    );
    await roleMatrixV13([
      {
        label: 'POST /v1.3/integrations',
        expect: { none: 401, manager: 403, other: 200, owner: 200 },
        request: async () => ({ method: 'POST', url: '/v1.3/integrations', payload: { type: 'widget', login: 'site' } }),
      },
      {
        label: 'DELETE /v1.3/integrations/<id>',
        expect: { none: 401, manager: 403, other: 404, owner: 200 },
        request: async () => ({ method: 'DELETE', url: `/v1.3/integrations/${await createIntegration(h, owner.accountId)}` }),
      },
    ]);
    // The other owner listed its own integrations, never this account's.
    expect((await list(actors.other.access)).map((i) => i.id)).not.toContain(listed);
  });

  it('serves connect and disconnect on v1.3 only (docs/api/integrations.md)', async () => {
    const id = await createIntegration(h, actors.owner.accountId);
    for (const v of ['v1.1', 'v1.2']) {
      const post = await h.request({ method: 'POST', url: `/${v}/integrations`, token: actors.owner.access, payload: { type: 'widget' } });
      expect(post.statusCode).toBe(404);
      const del = await h.request({ method: 'DELETE', url: `/${v}/integrations/${id}`, token: actors.owner.access });
      expect(del.statusCode).toBe(404);
    }
    expect((await list(actors.owner.access)).map((i) => i.id)).toContain(id);
  });
});

describe('GET /integrations', () => {
  it('lists the same Integration fields under every version, and never credentials or settings', async () => {
    const owner = await h.signUp();
    // A personal account: no provider is asked at connect (its bridge logs in later).
    const res = await connect(owner, {
      type: 'msgra2',
      login: 'support_bot',
      credentials: { token: SECRET_TOKEN },
      settings: { greeting: 'hi' },
    });
    expect(res.statusCode, res.body).toBe(200);
    for (const v of API_VERSIONS) {
      const items = await list(owner.access, v);
      expect(items).toHaveLength(1);
      // v1.3 adds the integration's health (docs/api/integrations.md "Health"); older versions are unchanged.
      expect(Object.keys(items[0]!).sort()).toEqual(v === 'v1.3' ? [...INTEGRATION_KEYS, 'health'].sort() : INTEGRATION_KEYS);
      expect(items[0]).toMatchObject({ type: 'msgra2', login: 'support_bot', status: 'connecting' });
    }
    expect(res.body).not.toContain(SECRET_TOKEN);
    expect(JSON.stringify(await list(owner.access))).not.toContain(SECRET_TOKEN);
    expect(JSON.stringify(await list(owner.access))).not.toContain('greeting');
  });

  it('shows a manager only the integrations in its sources ([] = all, [null] = none)', async () => {
    const owner = await h.signUp();
    const a = await createIntegration(h, owner.accountId, 'widget', 'a');
    const b = await createIntegration(h, owner.accountId, 'msgrb_bot', 'b');
    const all = await createManager(h, owner, { sources: [] });
    const onlyA = await createManager(h, owner, { sources: [a] });
    const none = await createManager(h, owner, { sources: [null] });
    expect((await list(all.access)).map((i) => i.id)).toEqual([a, b]);
    expect((await list(onlyA.access)).map((i) => i.id)).toEqual([a]);
    expect(await list(none.access)).toEqual([]);
    expect((await list(owner.access)).map((i) => i.id)).toEqual([a, b]);
  });
});

describe('POST /v1.3/integrations', () => {
  it("refuses a connect without the type's credentials (Page comments need the Page's), storing nothing", async () => {
    const owner = await h.signUp();
    const res = await connect(owner, { type: 'social1_group', login: 'page', credentials: { token: SECRET_TOKEN } });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({ code: 'validation_failed', error: expect.stringContaining('pageAccessToken') });
    expect(await list(owner.access)).toEqual([]);
    expect(await events(owner.accountId, 'integration.created')).toHaveLength(0);
  });

  it('records integration.created in the same change as the integration', async () => {
    const owner = await h.signUp();
    const res = await connect(owner, { type: 'msgra2', login: '+15550001', credentials: { token: SECRET_TOKEN } });
    expect(res.statusCode, res.body).toBe(200);
    const { bridge: _bridge, health, ...body } = res.json();
    expect(Object.keys(body).sort()).toEqual(INTEGRATION_KEYS);
    expect(health).toEqual({ lastInboundAt: null, lastOutboundAt: null, lastError: null, mode: 'bridge' });
    expect(body).toMatchObject({ type: 'msgra2', login: '+15550001', status: 'connecting', externalId: '', identifier: '', url: '' });

    const created = await events(owner.accountId, 'integration.created');
    expect(created).toHaveLength(1);
    expect(JSON.parse(created[0]!.payload)).toEqual({
      type: 'integration.created',
      accountId: owner.accountId,
      integrationId: body.id,
      integration: body,
    });
    expect(created[0]!.payload).not.toContain(SECRET_TOKEN);
  });

  it('keeps credentials encrypted at rest, and opens them for the adapter (round trip)', async () => {
    const owner = await h.signUp();
    const res = await connect(owner, {
      type: 'photonetV2',
      credentials: { token: SECRET_TOKEN, phoneNumberId: '1234567890' },
      settings: { businessSystems: ['crm'] },
    });
    expect(res.statusCode, res.body).toBe(200);
    const row = await integrationRow(res.json().id);
    expect(JSON.stringify(row)).not.toContain(SECRET_TOKEN);
    expect(JSON.stringify(row)).not.toContain('1234567890');
    expect(row.credentials).toMatch(/^v1\./);

    const opened = h.services.integrations.channelIntegration(row);
    expect(opened).toEqual({
      id: row.id,
      accountId: owner.accountId,
      type: 'photonetV2',
      login: '',
      externalId: '',
      identifier: '',
      credentials: { token: SECRET_TOKEN, phoneNumberId: '1234567890' },
      settings: { businessSystems: ['crm'] },
    });

    // The same secret twice seals to different texts (random IV per value).
    const again = await connect(owner, { type: 'photonetV2', credentials: { token: SECRET_TOKEN } });
    expect((await integrationRow(again.json().id)).credentials).not.toBe(row.credentials);
  });

  it('checks credentials with the adapter, which gets the id and the decrypted credentials, and keeps what the provider says', async () => {
    h.services.channels.register(fakeBot);
    const owner = await h.signUp();
    calls.connect.length = 0;
    const res = await connect(owner, { type: 'msgrb_bot', login: 'ignored', credentials: { token: '1:good' } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      type: 'msgrb_bot',
      status: 'active',
      login: 'shop_bot',
      externalId: '7715692646',
      identifier: 'bot-7715692646',
      avatar: 'https://provider.example/avatar/shop_bot.jpg',
      url: 'https://provider.example/shop_bot',
    });
    expect(calls.connect).toHaveLength(1);
    expect(calls.connect[0]).toMatchObject({ id: res.json().id, accountId: owner.accountId, credentials: { token: '1:good' } });
    expect(await list(owner.access)).toEqual([res.json()]);
    const created = await events(owner.accountId, 'integration.created');
    const { health: _health, ...integration } = res.json();
    expect(created.map((e) => JSON.parse(e.payload).integration)).toEqual([integration]);
  });

  it('keeps an integration the provider refused, with status "auth failure"', async () => {
    h.services.channels.register(fakeBot);
    const owner = await h.signUp();
    const res = await connect(owner, { type: 'msgrb_bot', login: 'my_bot', credentials: { token: '1:refused' } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ status: 'auth failure', login: 'my_bot' });
    expect(res.json().health.lastError).toEqual({
      at: h.clock.now(),
      code: 'credentials_refused',
      message: 'Telegram refused the bot token (Unauthorized: invalid token): check it with @BotFather.',
    });
    expect((await list(owner.access)).map((i) => i.status)).toEqual(['auth failure']);
    const created = await events(owner.accountId, 'integration.created');
    expect(JSON.parse(created[0]!.payload).integration.status).toBe('auth failure');
  });

  it('keeps nothing when the provider fails (502)', async () => {
    h.services.channels.register(fakeBot);
    const owner = await h.signUp();
    const before = await snapshot();
    const down = await connect(owner, { type: 'msgrb_bot', credentials: { token: '1:down' } });
    expect(down.statusCode).toBe(502);
    expect(down.json().code).toBe('channel_failed');
    expect(await snapshot()).toEqual(before);
  });

  it('keeps an integration whose provider did not answer in "auth failure", saying so in its health', async () => {
    h.services.channels.register(fakeBot);
    const owner = await h.signUp();
    const slow = await connect(owner, { type: 'msgrb_bot', credentials: { token: '1:slow' } });
    expect(slow.statusCode, slow.body).toBe(200);
    const seconds = Math.round(h.services.deps.config.sendTimeoutMs / 1000);
    expect(slow.json()).toMatchObject({
      status: 'auth failure',
      health: { lastError: { code: 'provider_timeout', message: `Telegram did not answer in ${seconds} s: try again later.` } },
    });
  });

  it('refuses bad input with 400 and details, writing nothing', async () => {
    const owner = await h.signUp();
    const cases: Array<[object, string]> = [
      [{ type: 'fax' }, 'body.type'],
      [{}, 'body.type'],
      [{ type: 'msgrb_bot' }, 'body.credentials.token'],
      [{ type: 'msgrb_bot', credentials: {} }, 'body.credentials.token'],
      [{ type: 'msgrb_bot', credentials: { token: '' } }, 'body.credentials.token'],
      [{ type: 'msgrb_bot', credentials: { token: '   ' } }, 'body.credentials.token'],
      [{ type: 'msgrb_bot', credentials: 'token' }, 'body.credentials'],
      [{ type: 'msgrb_bot', credentials: ['token'] }, 'body.credentials'],
      [{ type: 'msgrb_bot', credentials: { token: 12345 } }, 'body.credentials.token'],
      [{ type: 'msgrb_bot', credentials: { token: 'x'.repeat(4097) } }, 'body.credentials.token'],
      [{ type: 'msgrb_bot', credentials: { token: 'AAH-token-without-a-colon' } }, 'body.credentials.token'],
      [
        { type: 'msgra_business_api', credentials: { accessToken: 'EAAG', phoneNumberId: '+1 555 0100', appSecret: 's', wabaId: '456' } },
        'body.credentials.phoneNumberId',
      ],
      [{ type: 'widget', credentials: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v'])) }, 'body.credentials'],
      [{ type: 'widget', login: 42 }, 'body.login'],
      [{ type: 'widget', login: 'l'.repeat(256) }, 'body.login'],
      [{ type: 'widget', settings: 'x' }, 'body.settings'],
      [{ type: 'widget', settings: { businessSystems: 'crm' } }, 'body.settings.businessSystems'],
      [{ type: 'widget', settings: { blob: 'x'.repeat(17 * 1024) } }, 'body.settings'],
    ];
    const before = await snapshot();
    for (const [body, field] of cases) {
      const res = await connect(owner, body);
      expect(res.statusCode, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(res.json().code).toBe('validation_failed');
      expect(
        res.json().details.map((d: { path: string }) => d.path),
        JSON.stringify(body).slice(0, 80),
      ).toContain(field);
    }
    expect(await snapshot()).toEqual(before);
    // The message names the missing field.
    expect((await connect(owner, { type: 'msgrb_bot' })).json().error).toContain('token');
  });

  it('ignores unknown body fields (real clients send extras)', async () => {
    const owner = await h.signUp();
    const res = await connect(owner, { type: 'widget', id: 99, status: 'disabled', name: 'x' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().status).toBe('active');
    expect(res.json().id).not.toBe(99);
  });
});

describe('DELETE /v1.3/integrations/<id>', () => {
  it('disconnects through the adapter, hides the integration, keeps its leads, records integration.deleted', async () => {
    h.services.channels.register(fakeBot);
    const owner = await h.signUp();
    const { health: _health, ...made } = (await connect(owner, { type: 'msgrb_bot', credentials: { token: '1:good' } })).json();
    const lead = await createLead(h, owner.accountId, made.id);
    calls.disconnect.length = 0;

    const res = await h.request({ method: 'DELETE', url: `/v1.3/integrations/${made.id}`, token: owner.access });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({});
    expect(calls.disconnect.map((c) => [c.id, c.credentials.token])).toEqual([[made.id, '1:good']]);

    expect(await list(owner.access)).toEqual([]);
    const row = await integrationRow(made.id);
    expect(row.deleted_at).toBe(h.clock.now());
    expect(await db().selectFrom('leads').select('id').where('id', '=', lead.leadId).executeTakeFirst()).toBeDefined();
    expect(await db().selectFrom('customers').select('id').where('id', '=', lead.customerId).executeTakeFirst()).toBeDefined();

    const deleted = await events(owner.accountId, 'integration.deleted');
    expect(deleted).toHaveLength(1);
    expect(JSON.parse(deleted[0]!.payload)).toEqual({
      type: 'integration.deleted',
      accountId: owner.accountId,
      integrationId: made.id,
      integration: made,
    });

    const again = await h.request({ method: 'DELETE', url: `/v1.3/integrations/${made.id}`, token: owner.access });
    expect(again.statusCode).toBe(404);
    expect(await events(owner.accountId, 'integration.deleted')).toHaveLength(1);
  });

  it('removes the integration even when the provider cannot be told', async () => {
    h.services.channels.register(fakeBot);
    const owner = await h.signUp();
    const made = (await connect(owner, { type: 'msgrb_bot', credentials: { token: '1:disconnect-fails' } })).json();
    calls.disconnect.length = 0;
    const res = await h.request({ method: 'DELETE', url: `/v1.3/integrations/${made.id}`, token: owner.access });
    expect(res.statusCode).toBe(200);
    expect(calls.disconnect).toHaveLength(1);
    expect((await list(owner.access)).map((i) => i.id)).not.toContain(made.id);
    expect(await events(owner.accountId, 'integration.deleted')).toHaveLength(1);
  });

  it('answers 404 for ids of other accounts and non-existing ones; v1.3 answers 400 for a non-integer id', async () => {
    const owner = await h.signUp();
    const foreign = await createIntegration(h, actors.other.accountId);
    expect((await h.request({ method: 'DELETE', url: `/v1.3/integrations/${foreign}`, token: owner.access })).statusCode).toBe(404);
    expect((await h.request({ method: 'DELETE', url: '/v1.3/integrations/999999', token: owner.access })).statusCode).toBe(404);
    expect((await h.request({ method: 'DELETE', url: '/v1.3/integrations/abc', token: owner.access })).statusCode).toBe(400);
    expect((await integrationRow(foreign)).deleted_at).toBeNull();
  });
});

describe('integration look-ups by id (provider webhooks)', () => {
  it('find a live integration by id, and one of a type deleted or not, whatever the account; others find nothing', async () => {
    const live = await createIntegration(h, actors.owner.accountId, 'whatsapp', 'live');
    const deleted = await createIntegration(h, actors.other.accountId, 'telegram', 'gone');
    await db().updateTable('integrations').set({ deleted_at: h.clock.now() }).where('id', '=', deleted).execute();
    // A webhook's URL names any id: a missing one and one beyond bigint find nothing.
    const missing = deleted + 1_000_000;
    const asks = [
      { id: live, type: 'whatsapp', live: true, ofType: true },
      { id: live, type: 'telegram', live: true, ofType: false },
      { id: deleted, type: 'telegram', live: false, ofType: true },
      { id: missing, type: 'telegram', live: false, ofType: false },
      { id: 2 ** 63, type: 'telegram', live: false, ofType: false },
    ];
    // PostgreSQL: the look-ups of one turn share one statement (docs/performance.md), each caller getting its own copy of the row.
    const { counter, statements, reset } = statementCounter();
    const counted = db().withPlugin(counter);
    reset();
    const [lives, ofTypes] = await Promise.all([
      Promise.all(asks.map((ask) => findLiveIntegrationById(counted, ask.id))),
      Promise.all(asks.map((ask) => findIntegrationOfType(counted, ask.type, ask.id))),
    ]);
    if (DIALECT === 'postgres') expect(statements()).toBe(1);
    expect(lives.map((row) => row?.id)).toEqual(asks.map((ask) => (ask.live ? ask.id : undefined)));
    expect(ofTypes.map((row) => row?.id)).toEqual(asks.map((ask) => (ask.ofType ? ask.id : undefined)));
    const stored = await db().selectFrom('integrations').selectAll().where('id', '=', live).executeTakeFirstOrThrow();
    expect(lives[0]).toEqual(stored);
    expect(ofTypes[0]).toEqual(stored);
    expect(ofTypes[0]).not.toBe(lives[0]);
    // A later look-up sees a deletion committed before it.
    await db().updateTable('integrations').set({ deleted_at: h.clock.now() }).where('id', '=', live).execute();
    expect(await findLiveIntegrationById(counted, live)).toBeUndefined();
  });
});

describe('user mappings', () => {
  it('answer 400 for an integration without external business systems (GET and PUT)', async () => {
    const owner = await h.signUp();
    const plain = await createIntegration(h, owner.accountId);
    for (const v of API_VERSIONS) {
      const get = await h.request({ method: 'GET', url: `/${v}/integrations/${plain}/mappings/users`, token: owner.access });
      expect(get.statusCode).toBe(400);
      const put = await h.request({
        method: 'PUT',
        url: `/${v}/integrations/${plain}/mappings/users`,
        token: owner.access,
        payload: { a: owner.userId },
      });
      expect(put.statusCode).toBe(400);
    }
    expect((await integrationRow(plain)).user_mappings).toBeNull();
  });

  it('answer the owner as default, store a mapping to employees, and replace it on the next PUT', async () => {
    const owner = await h.signUp();
    const id = await businessIntegration(owner.accountId);
    const manager = await createManager(h, owner);
    const url = `/v1.3/integrations/${id}/mappings/users`;
    expect((await h.request({ method: 'GET', url, token: owner.access })).json()).toEqual({ default: owner.userId });

    const put = await h.request({ method: 'PUT', url, token: owner.access, payload: { 'crm-17': manager.userId, 'wh-3': owner.userId } });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json()).toEqual({ default: owner.userId, 'crm-17': manager.userId, 'wh-3': owner.userId });
    for (const v of API_VERSIONS) {
      const get = await h.request({ method: 'GET', url: `/${v}/integrations/${id}/mappings/users`, token: manager.access });
      expect(get.json()).toEqual({ default: owner.userId, 'crm-17': manager.userId, 'wh-3': owner.userId });
    }

    const replaced = await h.request({ method: 'PUT', url, token: owner.access, payload: { default: manager.userId } });
    expect(replaced.json()).toEqual({ default: manager.userId });
  });

  it('refuses values that are not employees of the account, keeping the stored mapping', async () => {
    const owner = await h.signUp();
    const id = await businessIntegration(owner.accountId);
    const url = `/v1.3/integrations/${id}/mappings/users`;
    await h.request({ method: 'PUT', url, token: owner.access, payload: { keep: owner.userId } });
    const before = await integrationRow(id);
    for (const payload of [{ x: actors.other.userId }, { default: 999999 }, { x: 'abc' }, { x: 0 }, []]) {
      const res = await h.request({ method: 'PUT', url, token: owner.access, payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
    }
    const bad = await h.request({ method: 'PUT', url, token: owner.access, payload: { 'crm-9': actors.other.userId } });
    expect(bad.json().details).toEqual([{ path: 'body.crm-9', message: 'is not an employee of this account' }]);
    expect(await integrationRow(id)).toEqual(before);
  });

  it('is not found for a manager outside the integration, or for a deleted integration', async () => {
    const owner = await h.signUp();
    const id = await businessIntegration(owner.accountId);
    const other = await createIntegration(h, owner.accountId);
    const outside = await createManager(h, owner, { sources: [other] });
    const url = `/v1.3/integrations/${id}/mappings/users`;
    expect((await h.request({ method: 'GET', url, token: outside.access })).statusCode).toBe(404);
    await h.request({ method: 'DELETE', url: `/v1.3/integrations/${id}`, token: owner.access });
    expect((await h.request({ method: 'GET', url, token: owner.access })).statusCode).toBe(404);
  });
});

describe('credentials cipher and its key', () => {
  it('refuses a tampered value, a value moved to another account, and a value sealed under another key', () => {
    const cipher = new CredentialsCipher(new TextEncoder().encode('k'.repeat(40)));
    const sealed = cipher.sealCredentials({ token: SECRET_TOKEN }, 1);
    expect(cipher.openCredentials(sealed, 1)).toEqual({ token: SECRET_TOKEN });
    const parts = sealed.split('.');
    const body = Buffer.from(parts[4]!, 'base64url');
    body[0] = body[0]! ^ 1;
    parts[4] = body.toString('base64url');
    expect(() => cipher.openCredentials(parts.join('.'), 1)).toThrow(/cannot be read/);
    expect(() => cipher.openCredentials(sealed, 2)).toThrow(/cannot be read/);
    const otherKey = new CredentialsCipher(new TextEncoder().encode('z'.repeat(40)));
    expect(() => otherKey.openCredentials(sealed, 1)).toThrow(/another encryption key/);
  });

  it('opens a value once: later opens answer copies from memory, and another account is still refused', () => {
    const cipher = new CredentialsCipher(new TextEncoder().encode('k'.repeat(40)));
    const sealed = cipher.sealCredentials({ token: SECRET_TOKEN }, 1);
    const decipher = vi.spyOn(crypto, 'createDecipheriv');
    try {
      const first = cipher.openCredentials(sealed, 1);
      first.token = 'changed here';
      expect(cipher.openCredentials(sealed, 1)).toEqual({ token: SECRET_TOKEN });
      expect(decipher).toHaveBeenCalledTimes(1);
      expect(() => cipher.openCredentials(sealed, 2)).toThrow(/cannot be read/);
      expect(() => cipher.openCredentials(sealed, 2)).toThrow(/cannot be read/);
      expect(decipher).toHaveBeenCalledTimes(3);
    } finally {
      decipher.mockRestore();
    }
  });

  it('keeps a generated key in the data folder when none is configured, so a restart still reads credentials', async () => {
    const owner = await h.signUp();
    const res = await connect(owner, { type: 'msgrb_personal', credentials: { token: SECRET_TOKEN } });
    const row = await integrationRow(res.json().id);
    expect(fs.existsSync(path.join(h.dataDir, 'encryption-key'))).toBe(true);
    const restarted = new IntegrationsService(
      { ...h.services.deps, config: loadConfig({ PARLEY_DATA_DIR: h.dataDir }) },
      new ChannelRegistry(),
    );
    expect(restarted.channelIntegration(row).credentials).toEqual({ token: SECRET_TOKEN });
  });

  it('uses PARLEY_ENCRYPTION_KEY when configured (no key file is written)', async () => {
    const keyed = await createHarness({ env: { PARLEY_ENCRYPTION_KEY: 'configured-encryption-key-0123456789abcdef' } });
    try {
      const owner = await keyed.signUp();
      const res = await keyed.request({
        method: 'POST',
        url: '/v1.3/integrations',
        token: owner.access,
        // A personal account: recorded without asking a provider.
        payload: { type: 'photonetV2', credentials: { token: SECRET_TOKEN } },
      });
      expect(res.statusCode).toBe(200);
      expect(fs.existsSync(path.join(keyed.dataDir, 'encryption-key'))).toBe(false);
      const row = await keyed.database.db.kysely
        .selectFrom('integrations')
        .selectAll()
        .where('id', '=', res.json().id)
        .executeTakeFirstOrThrow();
      const sameKey = new CredentialsCipher(new TextEncoder().encode('configured-encryption-key-0123456789abcdef'));
      expect(sameKey.openCredentials(row.credentials, owner.accountId)).toEqual({ token: SECRET_TOKEN });
    } finally {
      await keyed.close();
    }
    expect(() => loadConfig({ PARLEY_ENCRYPTION_KEY: 'short' })).toThrow(/PARLEY_ENCRYPTION_KEY/);
  });
});
