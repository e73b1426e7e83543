import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createManager } from './helpers/fixtures.js';
import { DIALECT } from './helpers/database.js';
import type { IntegrationRow } from '../src/db/schema.js';
import { searchText, wordStem } from '../src/domain/search/search-text.js';

// One corpus, one table of expected hits: the suite runs it on SQLite and on PostgreSQL, so both
// databases give the same hits for the same data (docs/api/messaging.md "Search").
let h: Harness;
let owner: SignedUp;
let main: IntegrationRow;
let formsIntegration: IntegrationRow;
const ids = new Map<string, number>();
const leads = new Map<string, number>();

const TEXTS: Record<string, { from: string; text: string }> = {
  k1: { from: 'Сергей Йошкин', text: 'Какой у вас адрес? Моё имя Сергей, ёлка нужна' },
  k2: { from: 'Андрей Николаев', text: 'Хочу розы с доставкой в Химки' },
  k3: { from: 'Алексей', text: 'Роза красная, доставка завтра' },
  k4: { from: 'Ольга', text: 'Доставку оформили в Химках, ЕЛКА тоже' },
  // "й" written decomposed: "и" + U+0306.
  k5: { from: 'Зоя', text: 'Мои\u0306 дом рядом' },
  // Look-alikes: Latin "cop", Cyrillic "сор".
  k6: { from: 'Latin', text: 'cop car' },
  k7: { from: 'Cyrillic', text: 'сор в доме' },
  k8: { from: 'Jane Doe', text: 'My orders were shipped' },
};

const SEARCHES: Array<{ q: string; expect: string[] }> = [
  { q: 'какой', expect: ['k1'] },
  { q: 'Сергей', expect: ['k1'] },
  { q: 'СЕРГЕЙ', expect: ['k1'] },
  { q: 'серге', expect: ['k1'] },
  { q: 'Сергеи\u0306', expect: ['k1'] },
  { q: 'ёлка', expect: ['k4', 'k1'] },
  { q: 'елка', expect: ['k4', 'k1'] },
  // "моё" and "мой" are forms of one word: each finds its own first.
  { q: 'моё', expect: ['k1', 'k5'] },
  { q: 'мое', expect: ['k1', 'k5'] },
  { q: 'мой', expect: ['k5', 'k1'] },
  { q: 'Мои\u0306', expect: ['k5', 'k1'] },
  // The form as written first, then the other forms, each tier newest first.
  { q: 'роза', expect: ['k3', 'k2'] },
  { q: 'розы', expect: ['k2', 'k3'] },
  { q: 'доставка', expect: ['k3', 'k4', 'k2'] },
  { q: 'Химках', expect: ['k4', 'k2'] },
  { q: 'химки', expect: ['k2', 'k4'] },
  { q: 'розы химках', expect: ['k2'] },
  { q: 'cop', expect: ['k6'] },
  { q: 'сор', expect: ['k7'] },
  { q: 'orders', expect: ['k8'] },
  { q: 'order', expect: ['k8'] },
  { q: 'ship', expect: ['k8'] },
  { q: 'отсутствует', expect: [] },
];

// Pairs of forms of one word: a message with the first, found by the second.
const FORMS = [
  ['роза', 'розы'],
  ['доставка', 'доставкой'],
  ['химки', 'химках'],
  ['заказ', 'заказами'],
  ['книга', 'книгу'],
  ['письмо', 'письма'],
  ['машина', 'машиной'],
  ['телефон', 'телефона'],
  ['магазин', 'магазине'],
  ['оплата', 'оплату'],
  ['неделя', 'недели'],
  ['курьер', 'курьером'],
  ['адрес', 'адреса'],
  ['платье', 'платья'],
  ['коробка', 'коробки'],
  ['москва', 'москве'],
  ['скидка', 'скидку'],
  ['цена', 'цены'],
  ['товар', 'товаров'],
  ['сумка', 'сумкой'],
  ['orders', 'order'],
  ['shipping', 'shipped'],
  ['boxes', 'box'],
  ['payments', 'payment'],
  ['cities', 'city'],
  ['running', 'runs'],
  ['jackets', 'jacket'],
  ['returned', 'returns'],
  ['gifts', 'gift'],
  ['connected', 'connection'],
];

const ingest = async (sa: IntegrationRow, key: string, from: string, text: string) => {
  h.clock.advance(1000);
  const r = await h.services.ingest.ingest(sa, {
    externalId: `ext-${key}`,
    datetime: h.clock.now(),
    sender: { socialId: `id-${key}`, name: from },
    channel: { externalId: `chat-${key}`, type: 'message' },
    text,
  });
  ids.set(key, r.messageId);
  leads.set(key, r.leadId);
};

beforeAll(async () => {
  h = await createHarness();
  owner = await h.signUp();
  main = await h.database.db.kysely
    .selectFrom('integrations')
    .selectAll()
    .where('id', '=', await createIntegration(h, owner.accountId, 'msgrb_bot'))
    .executeTakeFirstOrThrow();
  formsIntegration = await h.database.db.kysely
    .selectFrom('integrations')
    .selectAll()
    .where('id', '=', await createIntegration(h, owner.accountId, 'msgrb_bot'))
    .executeTakeFirstOrThrow();
  for (const [key, { from, text }] of Object.entries(TEXTS)) await ingest(main, key, from, text);
  for (const [i, [written]] of FORMS.entries()) await ingest(formsIntegration, `form-${i}`, `Form ${i}`, `a message with ${written} in it`);
});
afterAll(() => h.close());

const search = async (q: string, sa = main, token = owner.access) => {
  const res = await h.request({ method: 'POST', url: `/v1.3/search/${sa.id}`, payload: { q }, token });
  return res;
};
const found = async (q: string, sa = main) => {
  const res = await search(q, sa);
  expect(res.statusCode).toBe(200);
  return res.json().messages.map((m: { externalId: number }) => m.externalId);
};
const customers = async (q: string) => {
  const res = await h.request({ method: 'POST', url: '/v1.3/search/customers', payload: { q }, token: owner.access });
  expect(res.statusCode).toBe(200);
  return res.json().leads.map((l: { customer: { name: string } }) => l.customer.name);
};

describe('one normalization on both databases', () => {
  const STRINGS = [
    'Сергей Йошкин',
    'Сергеи\u0306 ЙОШКИН',
    'Ёлка, моё, ЁЖ',
    'Crème Brûlée, ÆØÅ & straße',
    'İSTANBUL Şişli',
    'ﬁne ①②③ x²',
    ' 42 x_y-z!? 3.14 ',
    'emoji 🍎🍐 and\ta tab',
    '\u0301\u0308 only marks',
    'Ǆemal Ǳ',
  ];

  it("the database's parley_search_text gives what searchText gives", async () => {
    for (const s of STRINGS) {
      const { rows } = await sql<{ t: string }>`select parley_search_text(${s}) as t`.execute(h.database.db.kysely);
      expect(rows[0].t, s).toBe(searchText(s));
    }
    expect(searchText('Сергеи\u0306 Йошкин ЁЛКА')).toBe('сергей йошкин елка');
    // PostgreSQL text cannot hold a NUL byte: the query side makes it a separator before SQL sees it.
    expect(searchText('a\u0000b')).toBe('a b');
  });

  // PostgreSQL stems with its own Snowball dictionaries; SQLite's are wordStem itself.
  if (DIALECT === 'postgres')
    it("PostgreSQL's parley_stems stems every corpus word as wordStem does", async () => {
      const words = [...new Set(FORMS.flat().concat(Object.values(TEXTS).flatMap((t) => searchText(t.text).split(' '))))];
      for (const w of words) {
        const { rows } = await sql<{
          s: string;
        }>`select array_to_string(tsvector_to_array(to_tsvector('parley_stems', ${w})), ' ') as s`.execute(h.database.db.kysely);
        expect(rows[0].s, w).toBe(wordStem(w));
      }
    });
});

describe('message search in Russian and English', () => {
  for (const s of SEARCHES) {
    it(`finds ${JSON.stringify(s.expect)} for ${JSON.stringify(s.q)}`, async () => {
      expect(await found(s.q)).toEqual(s.expect.map((k) => ids.get(k)));
    });
  }

  it('finds every word by another of its forms (20 Russian pairs, 10 English)', async () => {
    for (const [i, [written, asked]] of FORMS.entries()) {
      expect(wordStem(written), `${written} / ${asked}`).toBe(wordStem(asked));
      expect(await found(asked, formsIntegration), `${asked} -> ${written}`).toEqual([ids.get(`form-${i}`)]);
    }
    expect(FORMS.filter(([w]) => /^[а-я]+$/.test(w)).length).toBeGreaterThanOrEqual(20);
    expect(FORMS.filter(([w]) => /^[a-z]+$/.test(w)).length).toBeGreaterThanOrEqual(10);
  });

  it('pages through the exact tier, then the forms tier, with one cursor', async () => {
    // Twenty-five exact matches and three of another form, in pages of 20.
    const sa = await h.database.db.kysely
      .selectFrom('integrations')
      .selectAll()
      .where('id', '=', await createIntegration(h, owner.accountId, 'msgrb_bot'))
      .executeTakeFirstOrThrow();
    for (let i = 0; i < 3; i++) await ingest(sa, `p-form-${i}`, `P ${i}`, 'подарили розы');
    for (let i = 0; i < 25; i++) await ingest(sa, `p-exact-${i}`, `P ${i}`, 'одна роза');
    const first = await search('роза', sa);
    const page1 = first.json();
    expect(page1.messages.map((m: { externalId: number }) => m.externalId)).toEqual(
      Array.from({ length: 20 }, (_, i) => ids.get(`p-exact-${24 - i}`)),
    );
    const cursor = page1.cursors.find((c: { type: string }) => c.type === 'message');
    const next = await h.request({
      method: 'POST',
      url: `/v1.3/search/${sa.id}`,
      payload: { q: 'роза', cursors: [cursor] },
      token: owner.access,
    });
    expect(next.json().messages.map((m: { externalId: number }) => m.externalId)).toEqual([
      ...[4, 3, 2, 1, 0].map((i) => ids.get(`p-exact-${i}`)),
      ...[2, 1, 0].map((i) => ids.get(`p-form-${i}`)),
    ]);
    expect(next.json().cursors.find((c: { type: string }) => c.type === 'message').cursor).toBe(-1);
  });

  it('keeps visibility: a manager without the channel finds nothing, one who may not see a lead misses its forms too', async () => {
    const none = await createManager(h, owner, { sources: [null] });
    expect((await search('доставка', main, none.access)).statusCode).toBe(404);
    const manager = await createManager(h, owner);
    await h.database.db.kysely
      .updateTable('leads')
      .set({ user_id: owner.userId, status_type: 'active' })
      .where('id', '=', leads.get('k2')!)
      .execute();
    const res = await search('доставка', main, manager.access);
    expect(res.json().messages.map((m: { externalId: number }) => m.externalId)).toEqual([ids.get('k3'), ids.get('k4')]);
    await h.database.db.kysely
      .updateTable('leads')
      .set({ user_id: null, status_type: 'inbox' })
      .where('id', '=', leads.get('k2')!)
      .execute();
  });

  it('answers bad input with 400 or nothing, never an error of the index', async () => {
    for (const q of ['"', '***', '"unbalanced', 'NEAR(', 'AND', '- -', '\u0301\u0308', '.,;:!?', 'a\u0000b', "роза' OR 1=1 --"]) {
      const res = await search(q);
      expect([200, 400], q).toContain(res.statusCode);
      if (res.statusCode === 400) expect(res.json().code).toBeDefined();
    }
    expect((await search('р'.repeat(10_000))).statusCode).toBe(400);
    expect(await customers('\u0301')).toEqual([]);
  });

  it('answers bad customer-search input with 400 or nothing, never an error of the index', async () => {
    for (const q of ['"', '***', '"unbalanced', 'NEAR(', 'NEAR', '- -', '-', '*', '\u0301\u0308', '.,;:!?', '\u0000', "йош' OR 1=1 --"]) {
      const res = await h.request({ method: 'POST', url: '/v1.3/search/customers', payload: { q }, token: owner.access });
      expect([200, 400], JSON.stringify(q)).toContain(res.statusCode);
      if (res.statusCode === 400) expect(res.json().code, JSON.stringify(q)).toBeDefined();
      else expect(res.json().leads, JSON.stringify(q)).toEqual([]);
    }
    const long = await h.request({
      method: 'POST',
      url: '/v1.3/search/customers',
      payload: { q: 'й'.repeat(10_000) },
      token: owner.access,
    });
    expect(long.statusCode).toBe(400);
    expect(long.json().code).toBeDefined();
  });
});

describe('customer search in Russian', () => {
  it('finds names with й and ё by any word or prefix, and does not stem names', async () => {
    expect(await customers('Йошкин')).toEqual(['Сергей Йошкин']);
    expect(await customers('йош')).toEqual(['Сергей Йошкин']);
    expect(await customers('Сергей')).toEqual(['Сергей Йошкин']);
    expect(await customers('серге')).toEqual(['Сергей Йошкин']);
    expect(await customers('андрей')).toEqual(['Андрей Николаев']);
    expect(await customers('Ольга')).toEqual(['Ольга']);
    expect(await customers('Ольгой')).toEqual([]);
  });
});
