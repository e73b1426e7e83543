import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createLead, createManager } from './helpers/fixtures.js';
import { webhookFixture } from './helpers/webhook-fixture.js';
import { API_VERSIONS } from '../src/api/versions.js';

let h: Harness;
const fx = webhookFixture(() => h);
beforeAll(async () => {
  h = await createHarness({ env: { PARLEY_WEBHOOK_ALLOW_PRIVATE: '1' } });
});
afterEach(() => fx.stopAll());
afterAll(() => h.close());

const settings = (token: string) => h.request({ method: 'GET', url: '/v1.3/account/me/settings', token });
const put = (token: string, payload: object) => h.request({ method: 'PUT', url: '/v1.3/account/me/settings', token, payload });

async function apiKey(owner: SignedUp): Promise<string> {
  const res = await h.request({ method: 'POST', url: '/v1.3/account/me/api-keys', token: owner.access, payload: { name: 'crm' } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().token as string;
}

describe('account settings', () => {
  it('answers the defaults; the owner changes one, a manager reads but may not change', async () => {
    const owner = await h.signUp();
    const manager = await createManager(h, owner);
    expect((await settings(owner.access)).json()).toEqual({ typeNames: 'api', defaultCountry: 'RU' });
    expect((await settings(manager.access)).json()).toEqual({ typeNames: 'api', defaultCountry: 'RU' });
    expect((await put(manager.access, { typeNames: 'hosted' })).statusCode).toBe(403);
    const changed = await put(owner.access, { typeNames: 'hosted' });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json()).toEqual({ typeNames: 'hosted', defaultCountry: 'RU' });
    expect((await settings(manager.access)).json()).toEqual({ typeNames: 'hosted', defaultCountry: 'RU' });
    // An empty change changes nothing; another account is untouched.
    expect((await put(owner.access, {})).json()).toEqual({ typeNames: 'hosted', defaultCountry: 'RU' });
    expect((await settings((await h.signUp()).access)).json()).toEqual({ typeNames: 'api', defaultCountry: 'RU' });
  });

  it('an unknown setting or value is 400 naming its path, and changes nothing', async () => {
    const owner = await h.signUp();
    for (const [body, path] of [
      [{ typeNames: 'Hosted' }, 'body.typeNames'],
      [{ typeNames: 1 }, 'body.typeNames'],
      [{ typeNames: 'hosted\u0000' }, 'body.typeNames'],
      [{ colour: 'red' }, 'body.colour'],
    ] as const) {
      const res = await put(owner.access, body);
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().code).toBe('validation_failed');
      expect(JSON.stringify(res.json().details)).toContain(path);
    }
    expect((await put(owner.access, [1])).statusCode).toBe(400);
    expect((await settings(owner.access)).json()).toEqual({ typeNames: 'api', defaultCountry: 'RU' });
  });
});

describe("typeNames: 'hosted'", () => {
  it("names types the hosted service's way in answers to an API key, on every version; off by default; the app's session keeps codes", async () => {
    const owner = await h.signUp();
    const msgra = await createIntegration(h, owner.accountId, 'msgra');
    const widget = await createIntegration(h, owner.accountId, 'widget');
    await createLead(h, owner.accountId, msgra);
    await createLead(h, owner.accountId, widget);
    const key = await apiKey(owner);
    const typesIn = async (version: string, token: string) => {
      const res = await h.request({ method: 'GET', url: `/${version}/leads/inbox`, token });
      expect(res.statusCode, res.body).toBe(200);
      return (res.json() as Array<{ socialAccount: { type: string } }>).map((l) => l.socialAccount.type).sort();
    };
    for (const v of API_VERSIONS) expect(await typesIn(v, key)).toEqual(['msgra', 'widget']);
    await put(owner.access, { typeNames: 'hosted' });
    for (const v of API_VERSIONS) {
      expect(await typesIn(v, key)).toEqual(['whatsapp', 'widget']);
      expect(await typesIn(v, owner.access)).toEqual(['msgra', 'widget']);
    }
    const integrations = await h.request({ method: 'GET', url: '/v1.3/integrations', token: key });
    expect((integrations.json() as Array<{ type: string }>).map((i) => i.type).sort()).toEqual(['whatsapp', 'widget']);
    // The hosted names filter too, so a client reads and writes one vocabulary.
    const filtered = await h.request({ method: 'GET', url: '/v1.3/leads/inbox?types=whatsapp', token: key });
    expect((filtered.json() as Array<{ socialAccount: { type: string } }>).map((l) => l.socialAccount.type)).toEqual(['whatsapp']);
  });

  it('names types the hosted way in webhook payloads of that account only', async () => {
    const hosted = await h.signUp();
    const plain = await h.signUp();
    await put(hosted.access, { typeNames: 'hosted' });
    const r = await fx.receiver();
    for (const [i, owner] of [hosted, plain].entries()) {
      const res = await h.request({
        method: 'POST',
        url: '/v1.3/webhooks',
        token: owner.access,
        payload: { url: `${r.url}/${i}`, events: ['message.incoming'] },
      });
      expect(res.statusCode, res.body).toBe(200);
      const id = await createIntegration(h, owner.accountId, 'photonetV2');
      const integration = await h.database.db.kysely.selectFrom('integrations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      await h.services.ingest.ingest(integration, {
        externalId: `ts-${i}`,
        datetime: h.clock.now(),
        sender: { socialId: `c-${i}`, name: 'Ann' },
        channel: { externalId: `chat-${i}`, type: 'message' },
        text: 'a "type":"photonetV2" in the text stays',
      });
    }
    await fx.worker().drain();
    const bodies = r.received.map((x) => JSON.parse(x.body) as Record<string, any>);
    const of = (owner: SignedUp) => bodies.find((b) => b.accountId === owner.accountId)!;
    expect(of(hosted).message.sa.type).toBe('instagramV2');
    expect(of(hosted).message.sender.type).toBe('instagramV2');
    expect(of(hosted).message.message.text).toBe('a "type":"photonetV2" in the text stays');
    expect(of(plain).message.sa.type).toBe('photonetV2');
  });
});
