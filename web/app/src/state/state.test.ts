import { describe, expect, it } from 'vitest';
import type { FunnelColumn, HistoryMessage, Lead, Status } from '../api/types';
import { mergeTokens, needsRefresh, isExpired } from '../api/session';
import { backoff } from '../api/realtime-backoff';
import { addHistoryPage, addMessages, addPending, emptyConversation, failPending, hasMore, resolvePending } from './conversation';
import { columnAt, moveLead, reorder } from './funnel';
import { appendPage, applyMessage, emptyList, filterParams, inList, markRead, noFilters, removeLead, upsertLead } from './leads';
import { eventCombo, normalizeHotkey, phraseForKey, searchPhrases, slashQuery, usablePhrases } from './templates';
import { nearEnd, scrollToRow, visibleRange } from './window';

const iso = (ms: number) => new Date(ms).toISOString();
function lead(id: number, at: number, extra: Partial<Lead> = {}): Lead {
  return {
    id,
    userId: null,
    statusId: null,
    read: true,
    details: '',
    amount: 0,
    responseTime: null,
    tags: [],
    socialAccount: { id: 1, login: 'w', type: 'widget' },
    customer: { id, login: '', name: `C${id}`, avatar: '', email: null, phone: null },
    message: { unread: 0, timestamp: iso(at), incoming: true, data: { text: 'hi', url: '', attachments: [] } },
    address: '',
    ttn: '',
    customData: '',
    customFields: '{}',
    paymentTypeId: null,
    items: [],
    createdAt: iso(at),
    ...extra,
  };
}
function msg(id: string, at: number, incoming = true, realId = 7): HistoryMessage {
  return {
    messageId: id,
    datetime: at,
    sa: { id: 1, type: 'widget', login: '', avatar: '' },
    incoming,
    message: { text: `m${id}`, url: '', attachments: [] },
    sender: { id: 1 },
    source: { id: 's', realId, name: null, type: 'message', saId: 1, sender: 'x', token: null, identifier: '', expires: null },
    replyTo: null,
    preview: null,
  };
}

describe('lead lists', () => {
  it('appends pages without repeating leads and knows when it is done', () => {
    let s = appendPage(emptyList, [lead(3, 300), lead(2, 200)], 3, 2);
    expect(s).toMatchObject({ total: 3, done: false });
    s = appendPage(s, [lead(2, 200), lead(1, 100)], 3, 2);
    expect(s.items.map((l) => l.id)).toEqual([3, 2, 1]);
    s = appendPage(s, [], 3, 2);
    expect(s.done).toBe(true);
  });

  it('moves a lead to the top on a new incoming message and counts it unread unless it is open', () => {
    const s = appendPage(emptyList, [lead(3, 300), lead(2, 200), lead(1, 100)], 3, 50);
    const moved = applyMessage(s, 1, msg('9', 400), null);
    expect(moved.items.map((l) => l.id)).toEqual([1, 3, 2]);
    expect(moved.items[0].message).toMatchObject({ unread: 1, incoming: true, timestamp: iso(400) });
    expect(moved.items[0].read).toBe(false);
    expect(moved.total).toBe(3);
    const open = applyMessage(s, 1, msg('9', 400), 1);
    expect(open.items[0].message!.unread).toBe(0);
    expect(applyMessage(s, 42, msg('9', 400), null)).toBe(s);
  });

  it('an outgoing message keeps the unread count', () => {
    const s = appendPage(emptyList, [lead(1, 100, { read: false, message: { ...lead(1, 100).message!, unread: 2 } })], 1, 50);
    expect(applyMessage(s, 1, msg('9', 400, false), null).items[0].message).toMatchObject({ unread: 2, incoming: false });
  });

  it('inserts new leads in order, counts them, and leaves ones older than the loaded pages out', () => {
    const s = appendPage(emptyList, [lead(3, 300), lead(2, 200)], 10, 2);
    const added = upsertLead(s, lead(9, 250));
    expect(added.items.map((l) => l.id)).toEqual([3, 9, 2]);
    expect(added.total).toBe(11);
    expect(upsertLead(s, lead(8, 50))).toBe(s);
    const removed = removeLead(added, 9);
    expect(removed.items.map((l) => l.id)).toEqual([3, 2]);
    expect(removed.total).toBe(10);
  });

  it('marks a lead read', () => {
    const s = appendPage(emptyList, [lead(1, 100, { read: false, message: { ...lead(1, 100).message!, unread: 3 } })], 1, 50);
    expect(markRead(s, 1).items[0]).toMatchObject({ read: true, message: { unread: 0 } });
  });

  it('knows which list a status belongs to and drops statuses from inbox filters', () => {
    const statuses: Status[] = [
      { id: 1, name: 'a', order: 1, type: 'active', color: '' },
      { id: 2, name: 'c', order: 1, type: 'completed', color: '' },
      { id: 3, name: 'f', order: 1, type: 'failed', color: '' },
      { id: 4, name: 'i', order: 1, type: 'ignore', color: '' },
    ];
    expect(inList('inbox', { statusId: null }, statuses)).toBe(true);
    expect(inList('active', { statusId: 1 }, statuses)).toBe(true);
    expect(inList('completed', { statusId: 3 }, statuses)).toBe(true);
    expect(inList('all', { statusId: 4 }, statuses)).toBe(false);
    expect(inList('inbox', { statusId: 1 }, statuses)).toBe(false);
    const f = { ...noFilters, statuses: [1], unread: 'unread' as const };
    expect(filterParams('inbox', f).statuses).toBeUndefined();
    expect(filterParams('active', f)).toMatchObject({ statuses: [1], unread: 'unread' });
  });
});

describe('conversation', () => {
  it('merges history pages oldest first without duplicates and tracks the cursor', () => {
    let s = addHistoryPage(emptyConversation, { cursor: 5, messages: [msg('3', 300), msg('2', 200)] });
    s = addHistoryPage(s, { cursor: -1, messages: [msg('2', 200), msg('1', 100)] });
    expect(s.messages.map((m) => m.messageId)).toEqual(['1', '2', '3']);
    expect(hasMore(s)).toBe(false);
    s = addMessages(s, [msg('4', 400), msg('3', 300)]);
    expect(s.messages.map((m) => m.messageId)).toEqual(['1', '2', '3', '4']);
  });

  it('a pending send becomes the stored message, or stays with its failure', () => {
    const p = { tempId: 't1', text: 'hello', datetime: 1, replyTo: null, error: null };
    let s = addPending(emptyConversation, p);
    const failed = failPending(s, 't1', 'channel refused');
    expect(failed.pending[0].error).toBe('channel refused');
    s = resolvePending(s, 't1', [msg('10', 500, false)]);
    expect(s.pending).toEqual([]);
    expect(s.messages.map((m) => m.messageId)).toEqual(['10']);
  });
});

describe('templates', () => {
  const groups = [
    {
      id: 1,
      key: 'greetings',
      templates: [
        { id: 1, template: 'Hello! How can I help?', hotkey: 'Alt+1', userId: null },
        { id: 2, template: 'Mine', hotkey: 'ctrl+shift+m', userId: 5 },
      ],
    },
    { id: 2, key: 'shipping', templates: [{ id: 3, template: 'We ship in 2 days', hotkey: '2', userId: null }] },
  ];
  const key = (
    k: string,
    mods: Partial<{ ctrlKey: boolean; altKey: boolean; shiftKey: boolean; metaKey: boolean }> = {},
    code?: string,
  ) => ({
    key: k,
    ctrlKey: false,
    altKey: false,
    shiftKey: false,
    metaKey: false,
    ...mods,
    code,
  });

  it('normalizes hotkeys; a bare key means Alt+key', () => {
    expect(normalizeHotkey('Ctrl+Shift+M')).toBe('ctrl+shift+m');
    expect(normalizeHotkey('2')).toBe('alt+2');
    expect(normalizeHotkey('ctrl+')).toBeNull();
    expect(eventCombo(key('¡', { altKey: true }, 'Digit1'))).toBe('alt+1');
  });

  it('finds the phrase of a key combination among the usable ones', () => {
    const mine = usablePhrases(groups, 5);
    const other = usablePhrases(groups, 6);
    expect(phraseForKey(mine, key('1', { altKey: true }))?.id).toBe(1);
    expect(phraseForKey(mine, key('2', { altKey: true }))?.id).toBe(3);
    expect(phraseForKey(mine, key('M', { ctrlKey: true, shiftKey: true }))?.id).toBe(2);
    expect(phraseForKey(other, key('M', { ctrlKey: true, shiftKey: true }))).toBeUndefined();
    expect(phraseForKey(mine, key('1'))).toBeUndefined();
  });

  it('the slash search matches group names and texts', () => {
    expect(slashQuery('/ship')).toBe('ship');
    expect(slashQuery('hello /ship')).toBeNull();
    const phrases = usablePhrases(groups, null);
    expect(searchPhrases(phrases, 'ship').map((p) => p.id)).toEqual([3]);
    expect(searchPhrases(phrases, 'help').map((p) => p.id)).toEqual([1]);
    expect(searchPhrases(phrases, '').length).toBe(2);
  });
});

describe('funnel', () => {
  const col = (id: number, leads: Lead[]): FunnelColumn => ({ id, name: `s${id}`, order: id, type: 'active', color: '', leads });
  it('moves a lead between columns, keeping order, and ignores unknown targets', () => {
    const cols = [col(1, [lead(1, 100), lead(2, 50)]), col(2, [lead(3, 75)])];
    const moved = moveLead(cols, 1, 2);
    expect(moved[0].leads.map((l) => l.id)).toEqual([2]);
    expect(moved[1].leads.map((l) => [l.id, l.statusId])).toEqual([
      [1, 2],
      [3, null],
    ]);
    expect(moveLead(cols, 1, 1)).toBe(cols);
    expect(moveLead(cols, 1, 99)).toBe(cols);
  });
  it('reorders and finds the column under a point', () => {
    expect(reorder(['a', 'b', 'c'], 0, 2)).toEqual(['b', 'c', 'a']);
    expect(
      columnAt(
        [
          { id: 1, left: 0, right: 100 },
          { id: 2, left: 100, right: 200 },
        ],
        150,
      ),
    ).toBe(2);
  });
});

describe('virtual window', () => {
  it('renders only the rows in view plus overscan, for 10k rows', () => {
    expect(visibleRange(76 * 5000, 760, 76, 10_000, 6)).toEqual({ start: 4994, end: 5016 });
    expect(visibleRange(0, 760, 76, 3)).toEqual({ start: 0, end: 3 });
    expect(nearEnd(900, 100, 1200, 300)).toBe(true);
    expect(nearEnd(0, 100, 1200, 300)).toBe(false);
    expect(scrollToRow(0, 200, 50, 10)).toBe(350);
    expect(scrollToRow(600, 200, 50, 2)).toBe(100);
  });
});

describe('session and reconnect', () => {
  it('keeps the refresh token when only an access token comes back', () => {
    const s = mergeTokens(null, { accessToken: { token: 'a1', exp: 100 }, refreshToken: { token: 'r1', exp: 1000 } });
    const next = mergeTokens(s, { accessToken: { token: 'a2', exp: 200 } });
    expect(next).toEqual({ access: 'a2', accessExp: 200, refresh: 'r1', refreshExp: 1000 });
    expect(needsRefresh(next, 150)).toBe(true);
    expect(needsRefresh(next, 100)).toBe(false);
    expect(isExpired(next, 1000)).toBe(true);
  });
  it('backs off up to 15 s', () => {
    expect([0, 1, 2, 10].map(backoff)).toEqual([500, 1000, 2000, 15000]);
  });
});
