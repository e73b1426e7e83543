import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createManager } from './helpers/fixtures.js';
import { connectWidget, openVisitorSocket, sign, widgetSnapshot } from './widget-support.js';
import { statementCounter } from './helpers/statements.js';
import { DIALECT } from './helpers/database.js';
import { WidgetSessions } from '../src/domain/widget/widget-sessions.js';
import { RateLimiter } from '../src/domain/auth/rate-limiter.js';

let h: Harness;
let owner: SignedUp;

beforeAll(async () => {
  h = await createHarness();
  owner = await h.signUp();
});
afterAll(async () => h?.close());

const json = { 'content-type': 'application/json' };

async function session(payload: Record<string, unknown>, headers: Record<string, string> = {}) {
  return h.request({ method: 'POST', url: '/widget/v1/sessions', payload, headers: { ...json, ...headers } });
}

async function say(token: string, payload: Record<string, unknown>, headers: Record<string, string> = {}) {
  return h.request({
    method: 'POST',
    url: '/widget/v1/messages',
    payload,
    headers: { ...json, authorization: `Bearer ${token}`, ...headers },
  });
}

/** The widget's sessions on a connection whose statements are counted. */
function countedSessions() {
  const { counter, ...counts } = statementCounter();
  const deps = h.services.deps;
  const counted = new WidgetSessions({ ...deps, db: { ...deps.db, kysely: deps.db.kysely.withPlugin(counter) } }, h.services.integrations, {
    newSessionsPerIp: RateLimiter.for(deps, 'test-new-sessions', 100, 60_000),
    sessionCallsPerIp: RateLimiter.for(deps, 'test-session-calls', 100, 60_000),
  });
  return { counted, ...counts };
}

describe('connecting a widget', () => {
  it('answers the integration with its key, snippet and secret; the secret is stored encrypted', async () => {
    const res = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'widget', settings: { title: 'Shop', color: '#FF0000', allowedOrigins: ['https://shop.example/'] } },
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ type: 'widget', login: 'Shop', status: 'active' });
    expect(body.widget.key).toMatch(/^wk_/);
    expect(body.externalId).toBe(body.widget.key);
    expect(body.widget.snippet).toBe(`<script src="http://localhost:80/widget.js" data-parley-key="${body.widget.key}" async></script>`);
    expect(body.widget.secret).toMatch(/^wsec_/);
    expect(body.widget.settings).toMatchObject({
      title: 'Shop',
      color: '#ff0000',
      allowedOrigins: ['https://shop.example'],
      identityVerification: false,
    });
    const row = await h.database.db.kysely.selectFrom('integrations').selectAll().where('id', '=', body.id).executeTakeFirstOrThrow();
    expect(row.credentials).not.toContain(body.widget.secret);
    expect(h.services.integrations.channelIntegration(row).credentials.secret).toBe(body.widget.secret);

    // The owner reads it again; the list never shows it.
    const again = await h.request({ method: 'GET', url: `/v1.3/integrations/${body.id}/widget`, token: owner.access });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ key: body.widget.key, secret: body.widget.secret, snippet: body.widget.snippet });
    const list = await h.request({ method: 'GET', url: '/v1.3/integrations', token: owner.access });
    expect(list.body).not.toContain(body.widget.secret);
    const manager = await createManager(h, owner);
    expect((await h.request({ method: 'GET', url: `/v1.3/integrations/${body.id}/widget`, token: manager.access })).statusCode).toBe(403);
    const other = await h.signUp();
    expect((await h.request({ method: 'GET', url: `/v1.3/integrations/${body.id}/widget`, token: other.access })).statusCode).toBe(404);
  });

  it('refuses bad settings at connect and on PUT, keeping nothing; PUT changes only what it names', async () => {
    const before = await h.database.db.kysely.selectFrom('integrations').select('id').execute();
    for (const settings of [{ color: 'red' }, { allowedOrigins: ['javascript:alert(1)'] }, { preChat: { name: 'maybe' } }, { title: '' }]) {
      const res = await h.request({
        method: 'POST',
        url: '/v1.3/integrations',
        token: owner.access,
        payload: { type: 'widget', settings },
      });
      expect(res.statusCode, JSON.stringify(settings)).toBe(400);
    }
    expect(await h.database.db.kysely.selectFrom('integrations').select('id').execute()).toEqual(before);

    const w = await connectWidget(h, owner, { title: 'Before' });
    const bad = await h.request({
      method: 'PUT',
      url: `/v1.3/integrations/${w.id}/widget`,
      token: owner.access,
      payload: { allowedOrigins: ['not an origin'] },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().details[0].path).toBe('body.allowedOrigins.0');
    const ok = await h.request({
      method: 'PUT',
      url: `/v1.3/integrations/${w.id}/widget`,
      token: owner.access,
      payload: { preChat: { email: 'required' }, offline: true },
    });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().settings).toMatchObject({
      title: 'Before',
      preChat: { name: 'optional', email: 'required', phone: 'off' },
      offline: true,
    });
    const config = await h.request({ method: 'GET', url: `/widget/v1/widgets/${w.key}` });
    expect(config.json()).toMatchObject({ title: 'Before', offline: true, preChat: { email: 'required' } });
    expect(config.body).not.toContain(w.secret);
  });
});

describe('the visitor loop over HTTP', () => {
  it('stores a visitor message as a lead of a widget customer, and pushes replies to the open socket', async () => {
    const w = await connectWidget(h, owner, { preChat: { name: 'required', email: 'optional', phone: 'optional' } });
    const start = await session({ key: w.key, name: 'Ada Visitor', email: 'ada@example.com', phone: '+1 555 0100' });
    expect(start.statusCode, start.body).toBe(200);
    const { token, visitor } = start.json();
    expect(visitor).toMatchObject({ name: 'Ada Visitor', email: 'ada@example.com', verified: false });

    const sent = await say(token, { clientId: 'c1', text: 'Hello, is this in stock?' });
    expect(sent.statusCode, sent.body).toBe(200);
    expect(sent.json().message).toMatchObject({ from: 'visitor', text: 'Hello, is this in stock?' });
    // A retry with the same clientId is stored once, and answers the message stored first.
    expect((await say(token, { clientId: 'c1', text: 'Hello, is this in stock?' })).json().message.id).toBe(sent.json().message.id);
    const changed = await say(token, { clientId: 'c1', text: 'Hello again' });
    expect(changed.statusCode).toBe(200);
    expect(changed.json().message).toEqual(sent.json().message);

    const db = h.database.db.kysely;
    const lead = await db.selectFrom('leads').selectAll().where('integration_id', '=', w.id).executeTakeFirstOrThrow();
    const customer = await db.selectFrom('customers').selectAll().where('id', '=', lead.customer_id).executeTakeFirstOrThrow();
    expect(customer).toMatchObject({ name: 'Ada Visitor', email: 'ada@example.com', phone: '+1 555 0100' });
    const profile = await db.selectFrom('profiles').selectAll().where('customer_id', '=', customer.id).executeTakeFirstOrThrow();
    expect(profile).toMatchObject({ type: 'widget', social_id: visitor.id });
    expect(await db.selectFrom('messages').select('id').where('lead_id', '=', lead.id).execute()).toHaveLength(1);

    const { received, ws } = await openVisitorSocket(h, token);
    const typing = await h.request({
      method: 'POST',
      url: `/v1.3/widget/leads/${lead.id}/typing`,
      token: owner.access,
      payload: { typing: true },
    });
    expect(typing.statusCode, typing.body).toBe(200);
    const reply = await h.request({
      method: 'POST',
      url: `/v1.3/messaging/${lead.id}/send`,
      token: owner.access,
      payload: { message: { text: 'Yes, it is!' } },
    });
    expect(reply.statusCode, reply.body).toBe(200);
    await expect.poll(() => received.filter((m) => m.type === 'message').length).toBe(1);
    expect(received.find((m) => m.type === 'typing')).toEqual({ type: 'typing', typing: true });
    const pushed = received.find((m) => m.type === 'message').message;
    expect(pushed).toMatchObject({ from: 'agent', text: 'Yes, it is!' });
    ws.terminate();

    const history = await h.request({ method: 'GET', url: '/widget/v1/messages', headers: { authorization: `Bearer ${token}` } });
    expect(history.statusCode).toBe(200);
    expect(history.json().messages.map((m: any) => [m.from, m.text, m.id])).toEqual([
      ['visitor', 'Hello, is this in stock?', sent.json().message.id],
      ['agent', 'Yes, it is!', pushed.id],
    ]);

    // Resuming keeps the visitor; another visitor sees only its own conversation.
    const resumed = await session({ key: w.key, token });
    expect(resumed.json()).toMatchObject({ resumed: true, token, visitor: { id: visitor.id } });
    const other = (await session({ key: w.key, name: 'Bob' })).json().token;
    const theirs = await h.request({ method: 'GET', url: '/widget/v1/messages', headers: { authorization: `Bearer ${other}` } });
    expect(theirs.json().messages).toEqual([]);
  });

  it('keeps the visitor last seen time to the minute: not a write per message', async () => {
    const w = await connectWidget(h, owner);
    const { token, visitor } = (await session({ key: w.key, name: 'Seen' })).json();
    const db = h.database.db.kysely;
    const lastSeen = async () =>
      (
        await db
          .selectFrom('widget_visitors')
          .select('last_seen_at')
          .where('integration_id', '=', w.id)
          .where('public_id', '=', visitor.id)
          .executeTakeFirstOrThrow()
      ).last_seen_at;
    const started = await lastSeen();
    h.clock.advance(30_000);
    expect((await say(token, { clientId: 's1', text: 'one' })).statusCode).toBe(200);
    expect(await lastSeen()).toBe(started);
    h.clock.advance(30_000);
    expect((await say(token, { clientId: 's2', text: 'two' })).statusCode).toBe(200);
    expect(await lastSeen()).toBe(h.clock.now());
  });

  it('authenticates a visitor request in one statement (the visitor with its widget), and refuses a widget that stopped or was deleted', async () => {
    const w = await connectWidget(h, owner);
    const { token, visitor } = (await session({ key: w.key, name: 'Counted' })).json();
    // Every visitor request starts here, each widget message among them (docs/performance.md).
    const { counted, statements, reset } = countedSessions();
    reset();
    const found = await counted.authenticate(token, { origin: undefined, selfOrigin: undefined });
    expect(statements()).toBe(1);
    expect(found.row).toMatchObject({ public_id: visitor.id, integration_id: w.id, name: 'Counted' });
    expect(found.integration).toMatchObject({ id: w.id, type: 'widget', external_id: w.key, status: 'active' });

    const db = h.database.db.kysely;
    await db.updateTable('integrations').set({ status: 'disabled' }).where('id', '=', w.id).execute();
    expect((await say(token, { clientId: 'off1', text: 'hi' })).statusCode).toBe(401);
    await db.updateTable('integrations').set({ status: 'active' }).where('id', '=', w.id).execute();
    expect((await say(token, { clientId: 'on1', text: 'hi' })).statusCode).toBe(200);
    const del = await h.request({ method: 'DELETE', url: `/v1.3/integrations/${w.id}`, token: owner.access });
    expect(del.statusCode, del.body).toBe(200);
    expect((await say(token, { clientId: 'gone1', text: 'hi' })).statusCode).toBe(401);
    await expect(counted.authenticate(token, { origin: undefined, selfOrigin: undefined })).rejects.toMatchObject({ statusCode: 401 });
  });

  if (DIALECT === 'postgres') {
    it('authenticates the visitor requests of one turn together (one statement), each finding its own visitor or 401', async () => {
      const w = await connectWidget(h, owner);
      const gone = await connectWidget(h, owner);
      const tokens: { token: string; visitor: { id: string } }[] = [];
      // Started from addresses of their own: the suite's other tests share the per-address limit.
      const start = (key: string, i: number) =>
        h.services.widget.sessions.startSession(
          { key, name: `Batch ${i}` },
          { ip: `192.0.2.${i}`, origin: undefined, selfOrigin: undefined },
        );
      for (let i = 0; i < 12; i++) tokens.push(await start(w.key, i));
      const goneToken = (await start(gone.key, 99)).token;
      expect((await h.request({ method: 'DELETE', url: `/v1.3/integrations/${gone.id}`, token: owner.access })).statusCode).toBe(200);
      const { counted, statements, reset } = countedSessions();
      const request = { origin: undefined, selfOrigin: undefined };
      reset();
      const found = await Promise.allSettled([
        ...tokens.map((t) => counted.authenticate(t.token, request)),
        counted.authenticate(tokens[3].token, request),
        counted.authenticate('wvt_unknown', request),
        counted.authenticate(goneToken, request),
      ]);
      expect(statements()).toBe(1);
      const visitors = found.map((f) =>
        f.status === 'fulfilled' ? f.value.row.public_id : (f.reason as { statusCode: number }).statusCode,
      );
      expect(visitors).toEqual([...tokens.map((t) => t.visitor.id), tokens[3].visitor.id, 401, 401]);
    });
  }

  it('refuses a send to a channel that is no visitor of the widget (422), storing nothing', async () => {
    const w = await connectWidget(h, owner);
    const t = (await session({ key: w.key })).json().token;
    await say(t, { clientId: 'x1', text: 'hi' });
    const db = h.database.db.kysely;
    const source = await db.selectFrom('sources').selectAll().where('integration_id', '=', w.id).executeTakeFirstOrThrow();
    await db.updateTable('sources').set({ external_id: 'v_not_a_visitor' }).where('id', '=', source.id).execute();
    const lead = await db.selectFrom('leads').selectAll().where('integration_id', '=', w.id).executeTakeFirstOrThrow();
    const before = await widgetSnapshot(h);
    const res = await h.request({
      method: 'POST',
      url: `/v1.3/messaging/${lead.id}/send`,
      token: owner.access,
      payload: { message: { text: 'x' } },
    });
    expect(res.statusCode).toBe(422);
    expect(await widgetSnapshot(h)).toEqual(before);
  });

  it('takes an attachment and shows it in the message and history', async () => {
    const w = await connectWidget(h, owner);
    const token = (await session({ key: w.key })).json().token;
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(64, 1)]);
    const form = new FormData();
    form.append('file', new Blob([png], { type: 'image/png' }), 'photo.png');
    const r = new Response(form);
    const up = await h.request({
      method: 'POST',
      url: '/widget/v1/uploads',
      headers: { authorization: `Bearer ${token}`, 'content-type': r.headers.get('content-type')! },
      body: Buffer.from(await r.arrayBuffer()),
    });
    expect(up.statusCode, up.body).toBe(200);
    expect(up.json().file).toMatchObject({ name: 'photo.png', mime: 'image/png', type: 'photo', size: png.length });
    const sent = await say(token, { clientId: 'f1', fileId: up.json().file.id });
    expect(sent.statusCode, sent.body).toBe(200);
    expect(sent.json().message.attachments).toEqual([{ type: 'photo', url: up.json().file.url, name: 'photo.png', size: png.length }]);
    const file = await h.request({ method: 'GET', url: up.json().file.url });
    expect(file.statusCode).toBe(200);
  });
});

describe('identity verification', () => {
  it('accepts a valid signature (same visitor on every device) and refuses missing or forged ones, storing nothing', async () => {
    const w = await connectWidget(h, owner, { identityVerification: true });
    const good = await session({ key: w.key, identifier: 'user-42', signature: sign(w.secret, 'user-42') });
    expect(good.statusCode, good.body).toBe(200);
    expect(good.json().visitor).toMatchObject({ id: 'u_user-42', verified: true });
    const elsewhere = await session({ key: w.key, identifier: 'user-42', signature: sign(w.secret, 'user-42').toUpperCase() });
    expect(elsewhere.json().visitor.id).toBe('u_user-42');
    expect(elsewhere.json().token).not.toBe(good.json().token);

    const before = await widgetSnapshot(h);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{}, 'identity_required'],
      [{ identifier: 'user-42' }, 'identity_required'],
      [{ identifier: 'user-43', signature: sign(w.secret, 'user-42') }, 'identity_invalid'],
      [{ identifier: 'user-42', signature: sign('wsec_wrong', 'user-42') }, 'identity_invalid'],
      [{ identifier: 'user-42', signature: 'abc' }, 'identity_invalid'],
      // A token of the verified visitor does not stand in for the signature.
      [{ token: good.json().token }, 'identity_required'],
      [{ token: good.json().token, identifier: 'user-7', signature: 'f'.repeat(64) }, 'identity_invalid'],
    ];
    for (const [body, code] of cases) {
      const res = await session({ key: w.key, ...body });
      expect(res.statusCode, JSON.stringify(body)).toBe(403);
      expect(res.json().code).toBe(code);
    }
    expect(await widgetSnapshot(h)).toEqual(before);
  });
});

describe('bad input and abuse', () => {
  it('answers 404 for an unknown widget key, storing nothing', async () => {
    const before = await widgetSnapshot(h);
    for (const key of ['wk_doesnotexist000', 'nope', 'x'.repeat(80)]) {
      expect((await session({ key })).statusCode).toBe(404);
      expect((await h.request({ method: 'GET', url: `/widget/v1/widgets/${key}` })).statusCode).toBe(404);
    }
    expect((await session({ key: 'x'.repeat(81) })).statusCode).toBe(400);
    expect(await widgetSnapshot(h)).toEqual(before);
  });

  it('refuses origins the widget does not allow (HTTP 403, socket 4403), allows listed ones', async () => {
    const w = await connectWidget(h, owner, { allowedOrigins: ['https://shop.example'] });
    const allowed = await session({ key: w.key }, { origin: 'https://shop.example' });
    expect(allowed.statusCode).toBe(200);
    expect(allowed.headers['access-control-allow-origin']).toBe('https://shop.example');
    const token = allowed.json().token;
    const before = await widgetSnapshot(h);
    for (const origin of ['https://evil.example', 'http://shop.example', 'https://shop.example.evil.example', 'null']) {
      const res = await session({ key: w.key }, { origin });
      expect(res.statusCode, origin).toBe(403);
      expect(res.json().code).toBe('origin_not_allowed');
      expect((await say(token, { clientId: 'o1', text: 'hi' }, { origin })).statusCode).toBe(403);
      expect((await h.request({ method: 'GET', url: `/widget/v1/widgets/${w.key}`, headers: { origin } })).statusCode).toBe(403);
    }
    expect(await widgetSnapshot(h)).toEqual(before);
    const code = await new Promise<number>((resolve) => {
      void h.app.injectWS(
        `/widget/v1/socket?token=${token}`,
        { headers: { origin: 'https://evil.example' } },
        { onInit: (socket) => socket.on('close', (c) => resolve(c)) },
      );
    });
    expect(code).toBe(4403);
    // The preflight answers any origin; the request itself is what is checked.
    const pre = await h.request({
      method: 'OPTIONS',
      url: '/widget/v1/messages',
      headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST' },
    });
    expect(pre.statusCode).toBe(204);
    expect(pre.headers['access-control-allow-headers']).toContain('authorization');
  });

  it('refuses empty, oversized and malformed messages, a bad token, and missing pre-chat fields, storing nothing', async () => {
    const w = await connectWidget(h, owner, { preChat: { email: 'required' } });
    const token = (await session({ key: w.key, email: 'v@example.com' })).json().token;
    const before = await widgetSnapshot(h);
    const cases: Array<[Record<string, unknown>, number]> = [
      [{ clientId: 'e1', text: '' }, 400],
      [{ clientId: 'e2', text: '   \n ' }, 400],
      [{ clientId: 'e3' }, 400],
      [{ clientId: 'e4', text: 'x'.repeat(4001) }, 400],
      [{ clientId: 'bad id!', text: 'hi' }, 400],
      [{ text: 'hi' }, 400],
      [{ clientId: 'e5', text: 'hi', fileId: 'AAAAAAAAAAAAAAAAAAAAAA' }, 400],
    ];
    for (const [body, status] of cases) expect((await say(token, body)).statusCode, JSON.stringify(body).slice(0, 60)).toBe(status);
    expect((await say('wvt_forged', { clientId: 'e6', text: 'hi' })).statusCode).toBe(401);
    expect((await h.request({ method: 'POST', url: '/widget/v1/messages', payload: { clientId: 'e7', text: 'hi' } })).statusCode).toBe(401);
    const noEmail = await session({ key: w.key, name: 'No Mail' });
    expect(noEmail.statusCode).toBe(400);
    expect(noEmail.json().code).toBe('prechat_required');
    expect((await session({ key: w.key, email: 'not-an-email' })).statusCode).toBe(400);
    expect(await widgetSnapshot(h)).toEqual(before);
  });

  it('refuses uploads over the limit (413) and of forbidden types (415), storing nothing', async () => {
    const small = await createHarness({ env: { PARLEY_WIDGET_UPLOAD_LIMIT: '1024' } });
    try {
      const o = await small.signUp();
      const res = await small.request({ method: 'POST', url: '/v1.3/integrations', token: o.access, payload: { type: 'widget' } });
      const key = res.json().widget.key;
      const token = (await small.request({ method: 'POST', url: '/widget/v1/sessions', payload: { key } })).json().token;
      const upload = async (data: Buffer | string, type: string, filename: string) => {
        const form = new FormData();
        form.append('file', new Blob([data], { type }), filename);
        const r = new Response(form);
        return small.request({
          method: 'POST',
          url: '/widget/v1/uploads',
          headers: { authorization: `Bearer ${token}`, 'content-type': r.headers.get('content-type')! },
          body: Buffer.from(await r.arrayBuffer()),
        });
      };
      const before = await widgetSnapshot(small);
      expect((await upload(Buffer.alloc(2048, 65), 'text/plain', 'big.txt')).statusCode).toBe(413);
      expect((await upload('<html><script>alert(1)</script></html>', 'text/html', 'x.html')).statusCode).toBe(415);
      expect((await upload('<svg xmlns="http://www.w3.org/2000/svg"/>', 'image/svg+xml', 'x.svg')).statusCode).toBe(415);
      expect((await upload('not a png at all', 'image/png', 'fake.png')).statusCode).toBe(400);
      expect(
        (
          await small.request({
            method: 'POST',
            url: '/widget/v1/uploads',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'text/plain' },
            body: 'x',
          })
        ).statusCode,
      ).toBe(415);
      expect(await widgetSnapshot(small)).toEqual(before);
      expect((await upload('hello', 'text/plain', 'ok.txt')).statusCode).toBe(200);
    } finally {
      await small.close();
    }
  });

  it('answers 429 with Retry-After to floods of sessions and messages, and keeps serving others', async () => {
    const f = await createHarness({ env: { PARLEY_WIDGET_SESSIONS_PER_IP: '3', PARLEY_WIDGET_MESSAGES_PER_MINUTE: '4' } });
    try {
      const o = await f.signUp();
      const key = (await f.request({ method: 'POST', url: '/v1.3/integrations', token: o.access, payload: { type: 'widget' } })).json()
        .widget.key;
      const start = (ip: string) => f.request({ method: 'POST', url: '/widget/v1/sessions', payload: { key }, remoteAddress: ip });
      const tokens: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await start('203.0.113.9');
        expect(res.statusCode).toBe(200);
        tokens.push(res.json().token);
      }
      const before = await widgetSnapshot(f);
      const flooded = await start('203.0.113.9');
      expect(flooded.statusCode).toBe(429);
      expect(Number(flooded.headers['retry-after'])).toBeGreaterThan(0);
      expect(await widgetSnapshot(f)).toEqual(before);
      // Another IP still gets a session; resuming still works for the flooded IP.
      expect((await start('198.51.100.1')).statusCode).toBe(200);
      const resumed = await f.request({
        method: 'POST',
        url: '/widget/v1/sessions',
        payload: { key, token: tokens[0] },
        remoteAddress: '203.0.113.9',
      });
      expect(resumed.statusCode).toBe(200);

      const send = (token: string, i: number) =>
        f.request({
          method: 'POST',
          url: '/widget/v1/messages',
          payload: { clientId: `m${i}`, text: `n${i}` },
          headers: { authorization: `Bearer ${token}` },
          remoteAddress: '203.0.113.9',
        });
      for (let i = 0; i < 4; i++) expect((await send(tokens[0]!, i)).statusCode).toBe(200);
      const mid = await widgetSnapshot(f);
      const over = await send(tokens[0]!, 99);
      expect(over.statusCode).toBe(429);
      expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
      expect(await widgetSnapshot(f)).toEqual(mid);
      // The per-IP limit (3x) stops a flood spread over several visitors of one IP.
      for (let i = 10; i < 18; i++) expect((await send(tokens[1 + (i % 2)]!, i)).statusCode).toBe(200);
      expect((await send(tokens[1]!, 50)).statusCode).toBe(429);
      // A minute later the visitor may write again.
      f.clock.advance(61_000);
      expect((await send(tokens[0]!, 100)).statusCode).toBe(200);
      expect((await f.request({ method: 'GET', url: '/health' })).statusCode).toBe(200);
    } finally {
      await f.close();
    }
  });
});
