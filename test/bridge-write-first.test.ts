import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Harness, SignedUp } from './helpers/harness.js';
import { activeBridge, connectPersonal, freshLogin, openBridgeSuite } from './helpers/bridge-setup.js';
import { createServices } from '../src/services.js';

let h: Harness;
let base: string;
let owner: SignedUp;
const DAY = 86_400_000;
const silent = { info() {}, warn() {}, error() {}, debug() {} };

beforeAll(async () => {
  ({ h, base, owner } = await openBridgeSuite(2000));
});
afterAll(() => h?.close());
beforeEach(async () => {
  owner = await freshLogin(h, owner);
});

const db = () => h.database.db.kysely;
let seq = 0;
const phone = () => `+38067${String(1_000_000 + ++seq)}`;
const post = (payload: object, token = owner.access) => h.request({ method: 'POST', url: '/v1.3/messaging/post', token, payload });
const counted = (id: number) => db().selectFrom('write_first_contacts').selectAll().where('integration_id', '=', id).execute();

async function useQuota(integrationId: number, used: number) {
  const day = Math.floor(h.clock.now() / DAY);
  const rows = Array.from({ length: used }, (_, i) => ({
    account_id: owner.accountId,
    integration_id: integrationId,
    social_id: `seed-${day}-${i}`,
    day,
    created_at: h.clock.now(),
  }));
  if (rows.length) await db().insertInto('write_first_contacts').values(rows).execute();
}

describe('write first through the bridge', () => {
  for (const type of ['msgra', 'msgrb_personal']) {
    it(`${type}: the destination becomes the send's chat; customer, channel and lead are created`, async () => {
      const { id, token } = await connectPersonal(h, owner, type);
      const bridge = await activeBridge(h, base, id, token);
      const destination = phone();
      const res = await post({ saId: id, destination, message: { text: 'Your parcel is ready' } });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()[0]).toMatchObject({
        incoming: false,
        leadId: expect.any(Number),
        source: { id: destination },
        message: { text: 'Your parcel is ready' },
      });
      expect(bridge.acted).toEqual([expect.objectContaining({ type: 'send', chatId: destination, text: 'Your parcel is ready' })]);
      expect((await counted(id)).map((r) => r.social_id)).toEqual([destination]);
      await bridge.close();
    });
  }

  it('is idempotent on customId across two processes sharing the database: 409 while the first waits, then the first answer; sent once', async () => {
    const { id, token } = await connectPersonal(h, owner);
    const bridge = await activeBridge(h, base, id, token);
    // A second domain core on the same database: another Parley process as far as the rule goes.
    const other = createServices({ db: h.database.db, config: h.config, clock: h.clock, log: silent });
    const auth = await other.auth.authenticate(owner.access);
    const input = { saId: id, destination: 'buyer_login', message: { text: 'about your order' }, customId: 'order-77' };
    bridge.mode = { silent: true };
    const first = post(input);
    const request = await bridge.next((m) => m.type === 'send');
    await expect(other.messaging.post(auth, input)).rejects.toMatchObject({ statusCode: 409, code: 'in_progress' });
    bridge.answer(request.requestId, { ok: true, externalIds: ['m-1'] });
    const answered = await first;
    expect(answered.statusCode, answered.body).toBe(200);
    const repeat = await other.messaging.post(auth, input);
    // The service's answer before serialization: the API leaves customId out of History messages.
    expect(JSON.parse(JSON.stringify(repeat.map(({ customId: _, ...m }) => m)))).toEqual(answered.json());
    expect(bridge.acted).toHaveLength(1);
    const claims = await db().selectFrom('write_first_posts').selectAll().where('integration_id', '=', id).execute();
    expect(claims).toEqual([
      expect.objectContaining({ custom_id: 'order-77', destination: 'buyer_login', state: 'done', lead_id: answered.json()[0].leadId }),
    ]);
    await other.hub.stop();
    await bridge.close();
  });

  it("a refusal gives the customId and the day's place back; with no bridge: 502 channel_offline, nothing counted", async () => {
    const { id, token } = await connectPersonal(h, owner);
    const bridge = await activeBridge(h, base, id, token);
    const input = { saId: id, destination: phone(), message: { text: 'hi' }, customId: 'c-1' };
    bridge.mode = { refuse: 'PRIVACY_RESTRICTED' };
    expect((await post(input)).statusCode).toBe(422);
    expect(await counted(id)).toEqual([]);
    expect(await db().selectFrom('write_first_posts').selectAll().where('integration_id', '=', id).execute()).toEqual([]);
    bridge.mode = { accept: true };
    expect((await post(input)).statusCode).toBe(200);
    await bridge.close();
    const offline = await post({ saId: id, destination: phone(), message: { text: 'hi' } });
    expect(offline.statusCode).toBe(502);
    expect(offline.json().code).toBe('channel_offline');
    expect(await counted(id)).toHaveLength(1);
  });

  it('holds 100 new contacts per UTC day for msgrb_personal: 429 daily_limit before midnight (Retry-After), the bridge not asked; a new day opens', async () => {
    const { id, token } = await connectPersonal(h, owner);
    const bridge = await activeBridge(h, base, id, token);
    await useQuota(id, 99);
    expect((await post({ saId: id, destination: phone(), message: { text: 'the 100th' } })).statusCode).toBe(200);
    const midnight = (Math.floor(h.clock.now() / DAY) + 1) * DAY;
    h.clock.set(midnight - 10_000);
    const login = await h.request({ method: 'POST', url: '/v1.3/auth/login', payload: { login: owner.login, pass: owner.pass } });
    const late = login.json().accessToken.token;
    const over = await post({ saId: id, destination: phone(), message: { text: 'one too many' } }, late);
    expect(over.statusCode).toBe(429);
    expect(over.headers['retry-after']).toBe('10');
    expect(over.json().code).toBe('daily_limit');
    expect(bridge.acted).toHaveLength(1);
    h.clock.set(midnight);
    expect((await post({ saId: id, destination: phone(), message: { text: 'a new day' } }, late)).statusCode).toBe(200);
    expect(bridge.acted).toHaveLength(2);
    await bridge.close();
  });
});
