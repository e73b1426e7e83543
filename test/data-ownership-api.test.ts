import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createLead, createManager } from './helpers/fixtures.js';
import { readArchive, seedAccount } from './helpers/account-archive.js';

let h: Harness;
let owner: SignedUp;
let other: SignedUp;
let seeded: Awaited<ReturnType<typeof seedAccount>>;

beforeAll(async () => {
  h = await createHarness();
  owner = await h.signUp();
  other = await h.signUp();
  seeded = await seedAccount(h, owner);
});
afterAll(() => h.close());

const HOUR = 3_600_000;

describe('POST /v1.3/account/me/exports', () => {
  it('queues a job the worker runs; progress, then a download of the archive until it expires', async () => {
    const created = await h.request({ method: 'POST', url: '/v1.3/account/me/exports', token: owner.access });
    expect(created.statusCode, created.body).toBe(200);
    const job = created.json();
    expect(job).toMatchObject({ status: 'queued', progress: { done: 0, total: 0 }, downloadUrl: null });
    // One at a time.
    expect((await h.request({ method: 'POST', url: '/v1.3/account/me/exports', token: owner.access })).statusCode).toBe(409);
    expect(
      (await h.request({ method: 'GET', url: `/v1.3/account/me/exports/${job.id}/download`, token: owner.access })).json(),
    ).toMatchObject({ code: 'export_not_ready' });

    expect(await h.services.exports.runPending()).toBe(1);
    const ready = (await h.request({ method: 'GET', url: `/v1.3/account/me/exports/${job.id}`, token: owner.access })).json();
    expect(ready.status).toBe('ready');
    expect(ready.progress.done).toBe(ready.progress.total);
    expect(ready.progress.total).toBeGreaterThan(20);
    expect(Date.parse(ready.expiresAt) - h.clock.now()).toBe(24 * HOUR);

    const download = await h.request({ method: 'GET', url: ready.downloadUrl, token: owner.access });
    expect(download.statusCode).toBe(200);
    expect(download.headers['content-type']).toBe('application/gzip');
    expect(Number(download.headers['content-length'])).toBe(ready.size);
    const archive = await readArchive(download.rawPayload);
    expect(JSON.parse(archive.entries.get('manifest.json')!.toString()).account.id).toBe(owner.accountId);
    expect(archive.sections.get('messages')).toHaveLength(9);
    expect(archive.entries.has(`files/${seeded.fileId}`)).toBe(true);

    const list = (await h.request({ method: 'GET', url: '/v1.3/account/me/exports', token: owner.access })).json();
    expect(list.map((e: { id: number }) => e.id)).toContain(job.id);

    // Expiry: the archive is removed and the download answers 410.
    const now = h.clock.now();
    h.clock.advance(25 * HOUR);
    expect(await h.services.exports.expire()).toBe(1);
    // Back to the tokens' lifetime.
    h.clock.set(now);
    expect((await h.request({ method: 'GET', url: `/v1.3/account/me/exports/${job.id}`, token: owner.access })).json()).toMatchObject({
      status: 'expired',
      downloadUrl: null,
    });
    const gone = await h.request({ method: 'GET', url: `/v1.3/account/me/exports/${job.id}/download`, token: owner.access });
    expect(gone.statusCode).toBe(410);
  });

  it("is the owner's alone: managers get 403, another account's export id is not found", async () => {
    const manager = await createManager(h, owner);
    expect((await h.request({ method: 'POST', url: '/v1.3/account/me/exports', token: manager.access })).statusCode).toBe(403);
    expect((await h.request({ method: 'GET', url: '/v1.3/account/me/exports', token: manager.access })).statusCode).toBe(403);
    const mine = (await h.request({ method: 'POST', url: '/v1.3/account/me/exports', token: owner.access })).json();
    await h.services.exports.runPending();
    for (const url of [`/v1.3/account/me/exports/${mine.id}`, `/v1.3/account/me/exports/${mine.id}/download`]) {
      expect((await h.request({ method: 'GET', url, token: other.access })).statusCode).toBe(404);
    }
    expect((await h.request({ method: 'GET', url: '/v1.3/account/me/exports/99999999999', token: owner.access })).statusCode).toBe(404);
  });
});

describe('GET /v1.3/leads/export.csv', () => {
  it('answers the filtered leads the caller sees as CSV, safe against formula injection', async () => {
    const db = h.database.db.kysely;
    const lead = await createLead(h, owner.accountId, seeded.integrationId, { customerName: '=HYPERLINK("http://evil.example","x")' });
    await db.updateTable('leads').set({ details: '@SUM(1+1)', amount: 1250 }).where('id', '=', lead.leadId).execute();
    const res = await h.request({ method: 'GET', url: '/v1.3/leads/export.csv', token: owner.access });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toBe('attachment; filename="leads.csv"');
    const lines = res.body
      .replace(/^\ufeff/, '')
      .trim()
      .split('\r\n');
    expect(lines[0]).toMatch(/^"id","createdAt",/);
    const row = lines.find((l) => l.startsWith(`${lead.leadId},`))!;
    expect(row).toContain(`"'=HYPERLINK(""http://evil.example"",""x"")"`);
    expect(row).toContain(`"'@SUM(1+1)"`);
    expect(row).toContain(',1250,');
    expect(lines).toHaveLength(1 + 4);

    // The list filters apply: one integration's leads of one status.
    const completed = await h.request({
      method: 'GET',
      url: `/v1.3/leads/export.csv?sa=${seeded.integrationId}&customer=${lead.customerId}`,
      token: owner.access,
    });
    expect(completed.body.trim().split('\r\n')).toHaveLength(2);
    expect((await h.request({ method: 'GET', url: '/v1.3/leads/export.csv?unread=maybe', token: owner.access })).statusCode).toBe(400);
  });

  it("writes the header line in the requesting employee's language, with the same columns", async () => {
    const manager = await createManager(h, owner);
    await h.request({ method: 'PUT', url: `/v1.3/managers/${manager.userId}`, token: manager.access, payload: { locale: 'ru' } });
    const head = async (token: string) =>
      (await h.request({ method: 'GET', url: '/v1.3/leads/export.csv', token })).body.replace(/^\ufeff/, '').split('\r\n')[0];
    const russian = await head(manager.access);
    expect(russian).toMatch(/^"Номер","Создан","Изменён",/);
    expect(russian).toContain('"Последнее сообщение"');
    const english = await head(owner.access);
    expect(english).toMatch(/^"id","createdAt",/);
    expect(russian.split(',')).toHaveLength(english.split(',').length);
  });

  it('applies visibility: a manager limited to her own leads gets only those', async () => {
    const manager = await createManager(h, owner, { sources: [seeded.integrationId] });
    const mine = await createLead(h, owner.accountId, seeded.integrationId, { userId: manager.userId });
    const res = await h.request({ method: 'GET', url: '/v1.3/leads/export.csv', token: manager.access });
    const ids = res.body
      .replace(/^\ufeff/, '')
      .trim()
      .split('\r\n')
      .slice(1)
      .map((l) => Number(l.split(',')[0]));
    expect(ids).toContain(mine.leadId);
    // Leads of other employees are not hers to see.
    const others = await h.database.db.kysely
      .selectFrom('leads')
      .select('id')
      .where('account_id', '=', owner.accountId)
      .where('user_id', 'is not', null)
      .where('user_id', '!=', manager.userId)
      .execute();
    for (const o of others) expect(ids).not.toContain(o.id);
    const otherAccount = await h.request({ method: 'GET', url: '/v1.3/leads/export.csv', token: other.access });
    expect(
      otherAccount.body
        .replace(/^\ufeff/, '')
        .trim()
        .split('\r\n'),
    ).toHaveLength(1);
  });
});

describe('retention', () => {
  it('is forever by default; the owner sets days; bad values are refused with nothing changed', async () => {
    expect((await h.request({ method: 'GET', url: '/v1.3/account/me/retention', token: other.access })).json()).toEqual({
      messagesDays: null,
      filesDays: null,
    });
    const bad = await h.request({ method: 'PUT', url: '/v1.3/account/me/retention', token: other.access, payload: { messagesDays: 0 } });
    expect(bad.statusCode).toBe(400);
    const huge = await h.request({
      method: 'PUT',
      url: '/v1.3/account/me/retention',
      token: other.access,
      payload: { messagesDays: 1e300 },
    });
    expect(huge.statusCode).toBe(400);
    const manager = await createManager(h, other);
    expect(
      (await h.request({ method: 'PUT', url: '/v1.3/account/me/retention', token: manager.access, payload: { messagesDays: 5 } }))
        .statusCode,
    ).toBe(403);
    expect((await h.request({ method: 'GET', url: '/v1.3/account/me/retention', token: other.access })).json()).toEqual({
      messagesDays: null,
      filesDays: null,
    });
    const set = await h.request({ method: 'PUT', url: '/v1.3/account/me/retention', token: other.access, payload: { messagesDays: 30 } });
    expect(set.json()).toEqual({ messagesDays: 30, filesDays: null });
  });

  it('the sweep deletes older messages and files of accounts with a limit, in batches, and nothing else', async () => {
    const db = h.database.db.kysely;
    const account = await h.signUp();
    const { fileId } = await seedAccount(h, account);
    const fresh = await seedAccount(h, await h.signUp());
    void fresh;
    const countMessages = async (id: number) =>
      (await db.selectFrom('messages').select('id').where('account_id', '=', id).execute()).length;
    const othersBefore = (await db.selectFrom('messages').select('id').where('account_id', '!=', account.accountId).execute()).length;
    // Three of its messages are old; the rest new.
    const old = await db.selectFrom('messages').select('id').where('account_id', '=', account.accountId).orderBy('id').limit(3).execute();
    await db
      .updateTable('messages')
      .set({ created_at: h.clock.now() - 40 * 24 * HOUR })
      .where(
        'id',
        'in',
        old.map((r) => r.id),
      )
      .execute();
    await db
      .updateTable('files')
      .set({ created_at: h.clock.now() - 40 * 24 * HOUR })
      .where('id', '=', fileId)
      .execute();
    await h.request({
      method: 'PUT',
      url: '/v1.3/account/me/retention',
      token: account.access,
      payload: { messagesDays: 30, filesDays: 30 },
    });

    const result = await h.services.retention.sweep();
    expect(result).toMatchObject({ messages: 3, files: 1 });
    expect(await countMessages(account.accountId)).toBe(6);
    expect(await db.selectFrom('files').select('id').where('id', '=', fileId).executeTakeFirst()).toBeUndefined();
    expect((await h.request({ method: 'GET', url: `/files/${fileId}/photo.png` })).statusCode).toBe(404);
    expect((await db.selectFrom('messages').select('id').where('account_id', '!=', account.accountId).execute()).length).toBe(othersBefore);
    // A lead whose last message went keeps working in the list.
    const list = await h.request({ method: 'GET', url: '/v1.3/leads', token: account.access });
    expect(list.statusCode).toBe(200);
  });
});
