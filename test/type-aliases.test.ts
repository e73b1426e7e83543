import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createLead } from './helpers/fixtures.js';
import { API_VERSIONS } from '../src/api/versions.js';
import { HOSTED_TYPE_NAMES } from '../src/domain/channels/integration-types.js';

let h: Harness;
let owner: SignedUp;
/** Lead ids by integration type. */
const leads = new Map<string, number>();

beforeAll(async () => {
  h = await createHarness();
  owner = await h.signUp();
  for (const type of ['msgra', 'msgra2', 'photonetV2', 'photonetVOff', 'social3', 'widget']) {
    const integration = await createIntegration(h, owner.accountId, type);
    leads.set(type, (await createLead(h, owner.accountId, integration)).leadId);
  }
});
afterAll(() => h.close());

async function listed(version: string, query: string): Promise<number[]> {
  const res = await h.request({ method: 'GET', url: `/${version}/leads/inbox?limit=50&${query}`, token: owner.access });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json() as Array<{ id: number }>).map((l) => l.id).sort((a, b) => a - b);
}

const idsOf = (...types: string[]) => types.map((t) => leads.get(t)!).sort((a, b) => a - b);

describe("the hosted service's type names as aliases", () => {
  it('each alias filters the lead lists of every version as its code does', async () => {
    for (const version of API_VERSIONS) {
      for (const [code, alias] of Object.entries(HOSTED_TYPE_NAMES)) {
        expect(await listed(version, `types=${alias}`)).toEqual(idsOf(code));
        expect(await listed(version, `types=${alias}`)).toEqual(await listed(version, `types=${code}`));
      }
    }
  });

  it('mixes aliases and codes; an unknown name, or an alias in another case, matches nothing', async () => {
    for (const version of API_VERSIONS) {
      expect(await listed(version, 'types=whatsapp&types=msgra')).toEqual(idsOf('msgra'));
      expect(await listed(version, 'types=whatsapp&types=instagramV2&types=widget')).toEqual(idsOf('msgra', 'photonetV2', 'widget'));
      expect(await listed(version, 'types[]=whatsapp2,ok')).toEqual(idsOf('msgra2', 'social3'));
      expect(await listed(version, 'types=telegram')).toEqual([]);
      expect(await listed(version, 'types=WhatsApp')).toEqual([]);
      expect(await listed(version, 'types=instagramv2')).toEqual([]);
    }
  });

  it('statistics take aliases too', async () => {
    const stats = await h.request({ method: 'GET', url: '/v1.3/leads/statistics?types=whatsapp', token: owner.access });
    const byCode = await h.request({ method: 'GET', url: '/v1.3/leads/statistics?types=msgra', token: owner.access });
    expect(stats.statusCode, stats.body).toBe(200);
    expect(stats.json()).toEqual(byCode.json());
  });

  it('types with 1,000 values, a 10 KB value or a NUL byte is 400 on every version', async () => {
    const many = Array.from({ length: 1000 }, (_, i) => `types=t${i}`).join('&');
    const huge = `types=${'w'.repeat(10 * 1024)}`;
    const nul = 'types=whats%00app';
    for (const version of API_VERSIONS) {
      for (const query of [many, huge, nul]) {
        const res = await h.request({ method: 'GET', url: `/${version}/leads/inbox?${query}`, token: owner.access });
        expect(res.statusCode, `${version} ${query.slice(0, 20)}`).toBe(400);
      }
    }
  });

  it('POST /v1.3/integrations takes an alias as its type and answers the code', async () => {
    const res = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'whatsapp2', credentials: {} },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().type).toBe('msgra2');
    const wrongCase = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'Whatsapp2', credentials: {} },
    });
    expect(wrongCase.statusCode).toBe(400);
  });
});
