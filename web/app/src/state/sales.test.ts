import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { ReportStatistics } from '../api/types';
import { setLocale } from '../i18n';
import { csvField, dayBound, fillDays, formatDuration, niceMax, reportCsv } from './reports';
import { keepShown, noSelection, runBulk, selectAll, selectRange, toggle } from './selection';

describe('reports', () => {
  it('formats durations, fills missing days, and picks nice axis bounds', () => {
    expect([null, 4_000, 125_000, 3 * 3600_000 + 20 * 60_000, 50 * 3600_000].map(formatDuration)).toEqual([
      '—',
      '4 s',
      '2 min',
      '3 h 20 min',
      '2 d 2 h',
    ]);
    expect(
      fillDays([
        { date: '2026-03-01', count: 2 },
        { date: '2026-03-03', count: 1 },
      ]),
    ).toEqual([
      { date: '2026-03-01', count: 2 },
      { date: '2026-03-02', count: 0 },
      { date: '2026-03-03', count: 1 },
    ]);
    expect(fillDays([], '2026-02-27', '2026-03-01').map((d) => d.date)).toEqual(['2026-02-27', '2026-02-28', '2026-03-01']);
    expect([0, 1, 3, 7, 12, 99, 101].map(niceMax)).toEqual([1, 1, 5, 10, 20, 100, 200]);
    expect(dayBound('2026-03-01', false)).toBe(Date.UTC(2026, 2, 1));
    expect(dayBound('2026-03-01', true)).toBe(Date.UTC(2026, 2, 2) - 1);
    expect(dayBound('nope', true)).toBeUndefined();
  });

  it('writes CSV fields that survive any text and never start a formula', () => {
    expect(csvField('a,"b"\n')).toBe('"a,""b""\n"');
    expect(csvField('=HYPERLINK("x")')).toBe(`"'=HYPERLINK(""x"")"`);
    expect(csvField(-5)).toBe('-5');
    fc.assert(
      fc.property(fc.string(), (s) => {
        const f = csvField(s);
        const inner = f.startsWith('"') ? f.slice(1, -1).replace(/""/g, '"') : f;
        expect(inner).toBe(/^[=+\-@\t\r]/.test(s) ? `'${s}` : s);
        if (!f.startsWith('"')) expect(f).not.toMatch(/[",\r\n]/);
      }),
    );
    const stats: ReportStatistics = {
      lists: { inbox: 1, active: 2, completed: 0, all: 3, ignore: 0 },
      statuses: [{ id: 1, name: 'Won, finally', type: 'completed', count: 0 }],
      newLeads: [{ date: '2026-03-01', count: 3 }],
      responseTime: { median: 1000, count: 2 },
      employees: [{ userId: null, count: 3, responseTime: { median: 1000, count: 2 } }],
      channels: [{ type: 'widget', count: 3, responseTime: { median: null, count: 0 } }],
    };
    const csv = reportCsv(stats, { employee: (id) => (id === null ? 'Unassigned' : `#${id}`) });
    expect(csv.split('\r\n')).toContain('status,"Won, finally",0,,');
    expect(csv.split('\r\n')).toContain('employee,Unassigned,3,1000,2');
    expect(csv.split('\r\n')).toContain('channel,Site chat,3,,0');
    setLocale('ru');
    try {
      const lines = reportCsv(stats, { employee: () => 'Не назначен' }).split('\r\n');
      expect(lines[0]).toBe('раздел,название,лиды,медиана_ответа_мс,лиды_с_ответом');
      expect(lines).toContain('список,Входящие,1,,');
      expect(lines).toContain('сотрудник,Не назначен,3,1000,2');
      expect(formatDuration(3 * 3600_000 + 20 * 60_000)).toBe('3 ч 20 мин');
    } finally {
      setLocale('en');
    }
  });
});

describe('bulk selection', () => {
  const order = [10, 11, 12, 13, 14];
  it('toggles, selects ranges from the anchor either way, selects all shown, and forgets leads that left', () => {
    let sel = toggle(noSelection, 11);
    sel = selectRange(sel, order, 13);
    expect([...sel.ids].sort()).toEqual([11, 12, 13]);
    sel = selectRange(toggle(sel, 14), order, 10);
    expect([...sel.ids].sort()).toEqual([10, 11, 12, 13, 14]);
    sel = toggle(sel, 12);
    expect(sel.ids.has(12)).toBe(false);
    expect([...selectAll(noSelection, order).ids]).toEqual(order);
    expect([...keepShown(sel, [10, 11]).ids].sort()).toEqual([10, 11]);
  });

  it('runs every action, reports progress, and collects partial failures', async () => {
    const seen: number[] = [];
    const outcome = await runBulk(
      [1, 2, 3, 4, 5],
      async (id) => {
        if (id % 2 === 0) throw new Error(`no ${id}`);
      },
      (o) => seen.push(o.done),
      2,
    );
    expect(outcome.done).toBe(5);
    expect(outcome.failures.map((f) => f.id).sort()).toEqual([2, 4]);
    expect(seen).toEqual([1, 2, 3, 4, 5]);
  });
});

describe('funnel inbox column', () => {
  it('puts the Inbox first and maps drops on it to no status', async () => {
    const { withInbox, statusOfColumn, INBOX_COLUMN } = await import('./funnel-inbox');
    const lead = (id: number, amount: number) => ({ id, amount }) as never;
    const cols = withInbox(
      [{ id: 5, name: 'New', order: 1, type: 'active', color: '#000', leads: [lead(1, 10), lead(2, -3)] }],
      [lead(3, 7)],
      'Inbox',
    );
    expect(cols.map((c) => c.id)).toEqual([INBOX_COLUMN, 5]);
    expect([statusOfColumn(INBOX_COLUMN), statusOfColumn(5)]).toEqual([null, 5]);
  });

  it('takes column totals from the server (every lead, exact beyond 2^53), not from the loaded leads', async () => {
    const { totalsOf, formatTotal, INBOX_COLUMN } = await import('./funnel-inbox');
    const stats = {
      lists: { inbox: 130, active: 250, completed: 1, all: 381, ignore: 0 },
      amounts: { inbox: '9007199254740993', active: '1250', completed: '-5', all: '9007199254742238', ignore: '0' },
      statuses: [
        { id: 5, name: 'New', type: 'active', count: 250, amount: '1250' },
        { id: 7, name: 'Won', type: 'completed', count: 1, amount: '-5' },
      ],
    } as never;
    const totals = totalsOf(stats);
    expect(totals.get(INBOX_COLUMN)).toEqual({ count: 130, amount: 9007199254740993n });
    expect(totals.get(5)).toEqual({ count: 250, amount: 1250n });
    expect(totals.get(7)).toEqual({ count: 1, amount: -5n });
    expect([formatTotal(9007199254740993n), formatTotal(-5n), formatTotal(0n)]).toEqual(['$9,007,199,254,740,993', '-$5', '$0']);
  });

  it("moves a lead's amount and count between columns until the server answers; unknown columns and bad amounts change nothing", async () => {
    const { moveTotals, INBOX_COLUMN } = await import('./funnel-inbox');
    const totals = new Map([
      [INBOX_COLUMN, { count: 101, amount: 10_100n }],
      [5, { count: 2, amount: 30n }],
    ]);
    const moved = moveTotals(totals, 100, INBOX_COLUMN, 5);
    expect(moved.get(INBOX_COLUMN)).toEqual({ count: 100, amount: 10_000n });
    expect(moved.get(5)).toEqual({ count: 3, amount: 130n });
    expect(totals.get(5)).toEqual({ count: 2, amount: 30n }); // not mutated
    expect(moveTotals(totals, 100, 5, 5)).toBe(totals);
    expect(moveTotals(totals, 100, 5, 99)).toBe(totals);
    expect(moveTotals(totals, Number.NaN, 5, INBOX_COLUMN).get(INBOX_COLUMN)).toEqual({ count: 102, amount: 10_100n });
  });

  it('asks for the leads and the totals with the same filters', async () => {
    const { boardRequests, BOARD_PAGE } = await import('./funnel-inbox');
    const { noFilters } = await import('./leads');
    expect(boardRequests()).toEqual({
      funnel: `/leads/funnel?limit=${BOARD_PAGE}`,
      inbox: `/leads/inbox?limit=${BOARD_PAGE}`,
      totals: '/leads/statistics?amounts=true',
    });
    const r = boardRequests({ ...noFilters, sa: [3], tags: ['vip'], statuses: [5], unread: 'unread' });
    expect(r.funnel).toBe(`/leads/funnel?sa=3&tags=vip&statuses=5&unread=unread&limit=${BOARD_PAGE}`);
    expect(r.inbox).toBe(`/leads/inbox?sa=3&tags=vip&unread=unread&limit=${BOARD_PAGE}`);
    expect(r.totals).toBe('/leads/statistics?sa=3&tags=vip&unread=unread&amounts=true');
  });
});

describe('mentions in the note box', () => {
  it('finds the @query at the caret, inserts the chosen name, and highlights mentions as the server resolves them', async () => {
    const { mentionAt, insertMention, mentionCandidates, splitMentions } = await import('./mentions');
    const staff = [
      { id: 1, name: 'Ann', login: 'ann@x.io' },
      { id: 2, name: 'Ann Lee', login: 'lee@x.io' },
    ] as never[];
    expect(mentionAt('hi @an', 6)).toEqual({ start: 3, query: 'an' });
    expect(mentionAt('mail@an', 7)).toBeNull();
    expect(mentionCandidates(staff, 'ann').map((e: { id: number }) => e.id)).toEqual([1, 2]);
    expect(insertMention('hi @an!', 3, 6, staff[1])).toEqual({ text: 'hi @Ann Lee !', caret: 12 });
    expect(splitMentions('cc @ann lee, @Ann.', staff)).toEqual([
      { text: 'cc ' },
      { text: '@ann lee', userId: 2 },
      { text: ', ' },
      { text: '@Ann', userId: 1 },
      { text: '.' },
    ]);
  });
});
