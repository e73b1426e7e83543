import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ALWAYS_OPEN, WEEK_DAYS, type WorkingHours } from '../src/domain/automation/working-hours.js';
import { overdueCutoff, workingCutoff, workingMsBetween, workingResponseTime } from '../src/domain/automation/working-time.js';

/**
 * Time counted in working hours (docs/api/automation.md "First-response target"): the reports'
 * response time and the overdue cut-off. Pure calendar arithmetic: the database tests are in
 * automation-response-time.test.ts.
 */
const MIN = 60_000;
const HOUR = 60 * MIN;

/** New York: Mon-Fri 09:00-18:00, Thanksgiving 2026 (Thursday 26 November) a holiday; UTC-5 in November. */
const newYork: WorkingHours = {
  timezone: 'America/New_York',
  week: {
    mon: [['09:00', '18:00']],
    tue: [['09:00', '18:00']],
    wed: [['09:00', '18:00']],
    thu: [['09:00', '18:00']],
    fri: [['09:00', '18:00']],
  },
  holidays: ['2026-11-26'],
};
/** A New York wall-clock time in November 2026 (UTC-5) as an instant. */
const ny = (day: number, hour: number, minute = 0) => Date.UTC(2026, 10, day, hour + 5, minute);

describe('workingMsBetween', () => {
  it('counts a night, a holiday and a weekend out, in the account’s time zone', () => {
    // Tuesday 20:00 to Wednesday 09:30: only the half hour of Wednesday morning.
    expect(workingMsBetween(newYork, ny(24, 20), ny(25, 9, 30))).toBe(30 * MIN);
    // Wednesday 17:00 to Friday 10:00 over Thanksgiving: an hour each side of it.
    expect(workingMsBetween(newYork, ny(25, 17), ny(27, 10))).toBe(2 * HOUR);
    // Friday 17:50 to Monday 09:10: ten minutes each side of the weekend.
    expect(workingMsBetween(newYork, ny(27, 17, 50), ny(30, 9, 10))).toBe(20 * MIN);
    // Within a working day: all of it, to the millisecond.
    expect(workingMsBetween(newYork, ny(24, 10) + 1234, ny(24, 10, 40) + 99)).toBe(40 * MIN - 1135);
    // Read in UTC instead, Tuesday 20:00 New York (01:00 UTC Wednesday) would be working by 09:00 UTC.
    expect(workingMsBetween({ ...newYork, timezone: 'UTC' }, ny(24, 20), ny(25, 9, 30))).toBe(5.5 * HOUR);
    expect(workingMsBetween(newYork, ny(24, 12), ny(24, 12))).toBe(0);
  });

  it('open around the clock is the calendar, in any zone and across daylight saving changes', () => {
    const zones = ['UTC', 'America/New_York', 'Europe/Berlin', 'Australia/Lord_Howe', 'Asia/Kathmandu', 'Pacific/Auckland'];
    fc.assert(
      fc.property(
        fc.constantFrom(...zones),
        fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2027, 0, 1) }),
        fc.integer({ min: 0, max: 40 * 24 * HOUR }),
        (timezone, from, length) => {
          expect(workingMsBetween({ ...ALWAYS_OPEN, timezone }, from, from + length)).toBe(length);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('workingCutoff', () => {
  const hoursArb = fc.record({
    timezone: fc.constantFrom('UTC', 'America/New_York', 'Europe/Berlin', 'Asia/Kolkata'),
    days: fc.subarray([...WEEK_DAYS], { minLength: 1 }),
    from: fc.integer({ min: 0, max: 22 }),
    length: fc.integer({ min: 1, max: 10 }),
  });

  it('is where `ms` of working time end at `now`: the inverse of workingMsBetween', () => {
    fc.assert(
      fc.property(
        hoursArb,
        fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2027, 0, 1) }),
        fc.integer({ min: 1, max: 24 * 60 }),
        ({ timezone, days, from, length }, now, minutes) => {
          const to = Math.min(24, from + length);
          const range: [string, string] = [`${String(from).padStart(2, '0')}:00`, `${String(to).padStart(2, '0')}:00`];
          const hours: WorkingHours = { timezone, week: Object.fromEntries(days.map((d) => [d, [range]])), holidays: [] };
          const cutoff = workingCutoff(hours, now, minutes * MIN);
          expect(cutoff).not.toBeNull();
          expect(workingMsBetween(hours, cutoff as number, now)).toBe(minutes * MIN);
          // A millisecond later, the wait has not lasted that long.
          expect(workingMsBetween(hours, (cutoff as number) + 1, now)).toBeLessThan(minutes * MIN);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('a message at night: the target runs from the opening, not from the message', () => {
    // At 09:30 on Tuesday, 30 working minutes ago is the opening, 09:00.
    expect(workingCutoff(newYork, ny(24, 9, 30), 30 * MIN)).toBe(ny(24, 9));
    // At 09:29, a minute of them falls on Monday's close.
    expect(workingCutoff(newYork, ny(24, 9, 29), 30 * MIN)).toBe(ny(23, 17, 59));
    // Friday 09:10 after Thanksgiving: twenty minutes back reach Wednesday 17:50.
    expect(workingCutoff(newYork, ny(27, 9, 10), 20 * MIN)).toBe(ny(25, 17, 50));
  });

  it('closed all week: nothing is ever overdue', () => {
    expect(workingCutoff({ timezone: 'UTC', week: {}, holidays: [] }, ny(24, 12), MIN)).toBeNull();
    expect(overdueCutoff({ targetMinutes: 10, hours: { timezone: 'UTC', week: {}, holidays: [] } }, ny(24, 12))).toBeNull();
  });

  it('overdueCutoff: calendar without working hours, none without a target', () => {
    expect(overdueCutoff({ targetMinutes: 30, hours: null }, ny(24, 3))).toBe(ny(24, 2, 30));
    expect(overdueCutoff({ targetMinutes: null, hours: newYork }, ny(24, 3))).toBeNull();
    expect(overdueCutoff({ targetMinutes: 30, hours: newYork }, ny(24, 9, 30))).toBe(ny(24, 9));
  });
});

describe('workingResponseTime', () => {
  it('measures the wait that ended at the answer; without the answer’s time, the calendar figure', () => {
    expect(workingResponseTime(newYork, 13.5 * HOUR, ny(25, 9, 30))).toBe(30 * MIN);
    expect(workingResponseTime(newYork, 13.5 * HOUR, null)).toBe(13.5 * HOUR);
  });
});
