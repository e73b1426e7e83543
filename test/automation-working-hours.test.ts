import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isWorkingTime, type WorkingHours } from '../src/domain/automation/working-hours.js';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createManager } from './helpers/fixtures.js';

/** Working hours (docs/api/automation.md): the route, its bad input, and the local-time check. */
let h: Harness;
let owner: SignedUp;

beforeAll(async () => {
  h = await createHarness();
  owner = await h.signUp();
});
afterAll(() => h.close());

const put = (payload: Record<string, unknown>, token = owner.access) =>
  h.request({ method: 'PUT', url: '/v1.3/account/working-hours', token, payload });
const get = (token = owner.access) => h.request({ method: 'GET', url: '/v1.3/account/working-hours', token });

describe('isWorkingTime', () => {
  const berlin: WorkingHours = {
    timezone: 'Europe/Berlin',
    week: { mon: [['09:00', '18:00']], sat: [['10:00', '14:00']] },
    holidays: ['2026-12-31'],
  };
  it('reads the time in the zone, not in UTC', () => {
    // Monday 2026-11-30 08:30 UTC is 09:30 in Berlin (UTC+1): open.
    expect(isWorkingTime(berlin, Date.UTC(2026, 10, 30, 8, 30))).toBe(true);
    // 07:30 UTC is 08:30 in Berlin: not yet.
    expect(isWorkingTime(berlin, Date.UTC(2026, 10, 30, 7, 30))).toBe(false);
    // 17:30 UTC is 18:30 in Berlin: closed (the end is not included).
    expect(isWorkingTime(berlin, Date.UTC(2026, 10, 30, 17, 0))).toBe(false);
    // Sunday 23:30 UTC is already Monday 00:30 in Berlin, before opening; Tuesday is missing: closed.
    expect(isWorkingTime(berlin, Date.UTC(2026, 11, 1, 10, 0))).toBe(false);
  });
  it('a holiday is closed all day, by the local date', () => {
    // Thursday 2026-12-31 is a holiday; make Thursdays open to see the holiday win.
    const open = { ...berlin, week: { ...berlin.week, thu: [['00:00', '24:00']] as Array<[string, string]> } };
    expect(isWorkingTime(open, Date.UTC(2026, 11, 31, 12, 0))).toBe(false);
    // 23:30 UTC on the 30th is 00:30 on the 31st in Berlin: the holiday already.
    expect(isWorkingTime(open, Date.UTC(2026, 11, 30, 23, 30))).toBe(false);
    expect(isWorkingTime(open, Date.UTC(2026, 11, 24, 12, 0))).toBe(true);
  });
  it('across the date line: Auckland Monday morning is Sunday evening in UTC', () => {
    const nz: WorkingHours = { timezone: 'Pacific/Auckland', week: { mon: [['08:00', '12:00']] }, holidays: [] };
    // Sunday 2026-11-29 20:00 UTC is Monday 09:00 in Auckland (UTC+13 in summer).
    expect(isWorkingTime(nz, Date.UTC(2026, 10, 29, 20, 0))).toBe(true);
  });
});

describe('GET/PUT /v1.3/account/working-hours', () => {
  it('answers open around the clock until set, then what was set', async () => {
    const before = await get();
    expect(before.statusCode).toBe(200);
    expect(before.json().week.mon).toEqual([['00:00', '24:00']]);
    const body = { timezone: 'Europe/Berlin', week: { fri: [['09:00', '13:00']], mon: [['09:00', '18:00']] }, holidays: ['2026-12-31'] };
    const res = await put(body);
    expect(res.statusCode, res.body).toBe(200);
    expect((await get()).json()).toEqual(body);
  });

  it('refuses bad input with the path of the bad part and stores nothing', async () => {
    const stored = (await get()).json();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ timezone: 'Mars/Olympus', week: {} }, 'body.timezone'],
      [{ timezone: 'UTC', week: { mon: [['25:00', '26:00']] } }, 'body.week.mon.0.0'],
      [{ timezone: 'UTC', week: { tue: [['18:00', '09:00']] } }, 'body.week.tue.0'],
      [{ timezone: 'UTC', week: {}, holidays: ['2026-02-30'] }, 'body.holidays.0'],
      [{ timezone: 'UTC', week: { someday: [] } }, 'body.week'],
    ];
    for (const [body, path] of cases) {
      const res = await put(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      const paths = (res.json().details as Array<{ path: string }>).map((d) => d.path);
      expect(
        paths.some((p) => p.startsWith(path)),
        `${JSON.stringify(body)} -> ${paths.join(',')}`,
      ).toBe(true);
    }
    expect((await get()).json()).toEqual(stored);
  });

  it("is the owner's: a manager gets 403", async () => {
    const manager = await createManager(h, owner);
    expect((await get(manager.access)).statusCode).toBe(403);
    expect((await put({ timezone: 'UTC', week: {} }, manager.access)).statusCode).toBe(403);
  });
});
