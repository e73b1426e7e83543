import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './helpers/harness.js';
import { withLaterColumns } from './helpers/database.js';
import { createIntegration } from './helpers/fixtures.js';
import { MIGRATION_NAMES, migrateToLatest } from '../src/db/migrate.js';
import type { IntegrationRow } from '../src/db/schema.js';

/**
 * Migration 0105 normalizes index and query the same way and adds word stems: the messages and
 * customers a previous build stored (indexed without "й" as a letter, without stems) are found by
 * their words with "й" and "ё" and by other forms of them once it has run, on both databases.
 */
describe('search across migration 0105 (one normalization, stems)', () => {
  let h: Harness;
  let access: string;
  let integration: IntegrationRow;
  const ids: number[] = [];

  beforeAll(async () => {
    const before = MIGRATION_NAMES[MIGRATION_NAMES.indexOf('0105-search-text') - 1];
    h = await createHarness({ migrateTo: before });
    const login = 'reindex-owner@example.com';
    const pass = 'correct horse battery';
    const user = await h.services.accounts.createWithOwner({ login, pass, name: 'Owner' });
    const id = await createIntegration(h, user.account_id, 'msgrb_bot');
    integration = await h.database.db.kysely.selectFrom('integrations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    const texts = [
      ['Сергей Йошкин', 'Какой у вас адрес? ёлка нужна'],
      ['Андрей', 'Розы с доставкой в Химки'],
    ];
    await withLaterColumns(h.database.db.kysely, async () => {
      for (const [i, [name, text]] of texts.entries()) {
        h.clock.advance(1000);
        const r = await h.services.ingest.ingest(integration, {
          externalId: `old-${i}`,
          datetime: h.clock.now(),
          sender: { socialId: `old-${i}`, name },
          channel: { externalId: `old-chat-${i}`, type: 'message' },
          text,
        });
        ids.push(r.messageId);
      }
    });
    await migrateToLatest(h.database.db);
    const res = await h.request({ method: 'POST', url: '/v1.3/auth/login', payload: { login, pass } });
    access = res.json().accessToken.token;
  });
  afterAll(() => h.close());

  const messages = async (q: string) =>
    (await h.request({ method: 'POST', url: `/v1.3/search/${integration.id}`, payload: { q }, token: access }))
      .json()
      .messages.map((m: { externalId: number }) => m.externalId);
  const customers = async (q: string) =>
    (await h.request({ method: 'POST', url: '/v1.3/search/customers', payload: { q }, token: access }))
      .json()
      .leads.map((l: { customer: { name: string } }) => l.customer.name);

  it('finds what was stored before it by words with й and ё and by word forms', async () => {
    expect(await messages('какой')).toEqual([ids[0]]);
    expect(await messages('елка')).toEqual([ids[0]]);
    expect(await messages('роза доставка химках')).toEqual([ids[1]]);
    expect(await customers('Йошкин')).toEqual(['Сергей Йошкин']);
    expect(await customers('андрей')).toEqual(['Андрей']);
  });

  it('keeps the index current for what is stored after it', async () => {
    h.clock.advance(1000);
    const r = await h.services.ingest.ingest(integration, {
      externalId: 'new-0',
      datetime: h.clock.now(),
      sender: { socialId: 'new-0', name: 'Николай' },
      channel: { externalId: 'new-chat-0', type: 'message' },
      text: 'Мой заказ',
    });
    expect(await messages('заказами')).toEqual([r.messageId]);
    expect(await customers('николай')).toEqual(['Николай']);
  });
});
