import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importAccount } from '../src/domain/portability/account-importer.js';
import { FORMAT_VERSION } from '../src/domain/portability/archive-format.js';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { canonical, exportToBuffer, readArchive, seedAccount, writeArchive } from './helpers/account-archive.js';
import { storedBlobs } from './helpers/multipart.js';

// Two installations: the one exported from, and a fresh one imported into.
let source: Harness;
let target: Harness;
/** A third installation, left empty: refused imports must leave it so. */
let fresh: Harness;
let owner: SignedUp;
let seeded: Awaited<ReturnType<typeof seedAccount>>;
let archive: Buffer;

beforeAll(async () => {
  source = await createHarness();
  target = await createHarness();
  fresh = await createHarness();
  owner = await source.signUp();
  seeded = await seedAccount(source, owner);
  // Another account's rows must not leak into the export.
  await seedAccount(source, await source.signUp());
  archive = await exportToBuffer(source, owner.accountId);
});
afterAll(async () => {
  await source?.close();
  await target?.close();
  await fresh?.close();
});

const importInto = (h: Harness, bytes: Buffer) =>
  importAccount(h.database.db.kysely, h.services.files.storage, Readable.from([bytes]), h.clock);
const accountCount = async (h: Harness) => (await h.database.db.kysely.selectFrom('accounts').select('id').execute()).length;
const rowCount = async (h: Harness, table: 'messages' | 'users' | 'files') =>
  (await h.database.db.kysely.selectFrom(table).select('account_id').execute()).length;

describe('export', () => {
  it('writes the manifest, every section of the account and the files, and only that account', async () => {
    const a = await readArchive(archive);
    const names = [...a.entries.keys()];
    expect(names[0]).toBe('manifest.json');
    expect(names[names.length - 1]).toBe('end.json');
    const manifest = JSON.parse(a.entries.get('manifest.json')!.toString());
    expect(manifest).toMatchObject({ format: 'parley-account-export', version: FORMAT_VERSION, account: { id: owner.accountId } });
    expect(a.sections.get('employees')).toHaveLength(3);
    expect(a.sections.get('messages')).toHaveLength(9);
    expect(a.sections.get('leads')).toHaveLength(3);
    expect(a.sections.get('lead_tags')).toHaveLength(2);
    for (const s of [
      'integrations',
      'employee_integrations',
      'statuses',
      'payment_types',
      'tags',
      'template_groups',
      'templates',
      'customers',
      'profiles',
      'files',
      'channels',
      'webhooks',
    ]) {
      expect(a.sections.get(s)?.length, s).toBeGreaterThan(0);
    }
    expect(a.sections.get('files')![0]!.id).toBe(seeded.fileId);
    expect(a.entries.get(`files/${seeded.fileId}`)!.length).toBe(a.sections.get('files')![0]!.size);
    // Section order is reference order: a file's bytes follow the files section.
    expect(names.indexOf(`files/${seeded.fileId}`)).toBeGreaterThan(names.findIndex((n) => n.startsWith('files/0')));
    expect(names.indexOf(`files/${seeded.fileId}`)).toBeLessThan(names.findIndex((n) => n.startsWith('channels/')));
  });

  it('leaves secrets out: password hashes, credentials, webhook secrets', async () => {
    const text = [...(await readArchive(archive)).entries]
      .filter(([n]) => !n.startsWith('files/'))
      .map(([, b]) => b.toString())
      .join('\n');
    expect(text).not.toContain('SEALED-CREDENTIALS');
    expect(text).not.toContain('whsec_');
    expect(text).not.toContain('$argon2');
    expect(text).not.toMatch(/password_hash|credentials|"secret"|"token"/);
  });
});

describe('import', () => {
  it('round trip: export -> import into a fresh installation -> export gives the same records and files', async () => {
    const report = await importInto(target, archive);
    expect(report).toMatchObject({
      alreadyImported: false,
      sourceAccountId: owner.accountId,
      files: 1,
      filesWithoutBytes: 0,
      referencesCleared: 0,
    });
    expect(report.counts.messages).toBe(9);
    const again = await readArchive(await exportToBuffer(target, report.accountId));
    const first = await readArchive(archive);
    expect(canonical(again)).toEqual(canonical(first));
    const [oldFile] = first.sections.get('files')!;
    const [newFile] = again.sections.get('files')!;
    expect(newFile!.id).not.toBe(oldFile!.id);
    expect(again.entries.get(`files/${String(newFile!.id)}`)).toEqual(first.entries.get(`files/${String(oldFile!.id)}`));
    // The imported file is served at its new address.
    const res = await target.request({ method: 'GET', url: `/files/${String(newFile!.id)}/photo.png` });
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload).toEqual(first.entries.get(`files/${String(oldFile!.id)}`));
  });

  it('is idempotent: importing the same archive again changes nothing and says so', async () => {
    const before = {
      accounts: await accountCount(target),
      messages: await rowCount(target, 'messages'),
      blobs: storedBlobs(target).length,
    };
    const report = await importInto(target, archive);
    expect(report.alreadyImported).toBe(true);
    expect({
      accounts: await accountCount(target),
      messages: await rowCount(target, 'messages'),
      blobs: storedBlobs(target).length,
    }).toEqual(before);
  });

  it('imported employees have no password until one is set; the owner can then sign in', async () => {
    const report = await importInto(target, archive);
    const users = await target.database.db.kysely
      .selectFrom('users')
      .select(['login', 'password_hash', 'role'])
      .where('account_id', '=', report.accountId)
      .execute();
    expect(users.every((u) => u.password_hash === null)).toBe(true);
    await target.services.accounts.resetOwnerPassword(owner.login, 'a new password 123');
    const login = await target.request({
      method: 'POST',
      url: '/v1.3/auth/login',
      payload: { login: owner.login, pass: 'a new password 123' },
    });
    expect(login.statusCode, login.body).toBe(200);
  });
});

describe('import: refused archives leave nothing behind', () => {
  async function expectRefused(bytes: Buffer, message: RegExp, h: Harness = fresh): Promise<void> {
    const before = {
      accounts: await accountCount(h),
      users: await rowCount(h, 'users'),
      files: await rowCount(h, 'files'),
      blobs: storedBlobs(h).length,
    };
    await expect(importInto(h, bytes)).rejects.toThrow(message);
    expect({
      accounts: await accountCount(h),
      users: await rowCount(h, 'users'),
      files: await rowCount(h, 'files'),
      blobs: storedBlobs(h).length,
    }).toEqual(before);
  }

  const entriesOf = async () => [...(await readArchive(archive)).entries];
  const withManifest = async (change: (m: Record<string, unknown>) => void) =>
    writeArchive(
      (await entriesOf()).map(([n, b]) => {
        if (n !== 'manifest.json') return [n, b];
        const m = JSON.parse(b.toString()) as Record<string, unknown>;
        change(m);
        return [n, Buffer.from(JSON.stringify(m))];
      }),
    );

  it("into the installation it came from: the employees' logins are taken", async () => {
    await expectRefused(archive, /logins already used.*@example\.com/, source);
  });

  it('a truncated archive, wherever the cut falls (between entries, inside a part, inside a file)', async () => {
    for (const share of [0.1, 0.25, 0.4, 0.6, 0.75, 0.9, 0.97]) {
      await expectRefused(archive.subarray(0, Math.floor(archive.length * share)), /corrupt or truncated/);
    }
  });

  it('an archive cut at an entry boundary (no end entry)', async () => {
    const entries = (await entriesOf()).filter(([n]) => n !== 'end.json');
    await expectRefused(await writeArchive(await withFreshId(entries)), /truncated: its end entry is missing/);
  });

  it('corrupt bytes', async () => {
    const bad = Buffer.from(archive);
    for (let i = 40; i < bad.length - 20; i += 97) bad[i] = bad[i]! ^ 0x5a;
    await expectRefused(bad, /corrupt/);
  });

  it('not gzip at all', async () => {
    await expectRefused(Buffer.from('hello, this is not an archive'), /corrupt or truncated/);
  });

  it('a newer format version', async () => {
    await expectRefused(
      await withManifest((m) => (m.version = FORMAT_VERSION + 1)),
      new RegExp(`format version ${FORMAT_VERSION + 1}.*upgrade Parley`),
    );
  });

  it('a record referring to something the archive does not hold (after files were stored)', async () => {
    const entries = await withFreshId(await entriesOf());
    const i = entries.findIndex(([n]) => n.startsWith('messages/'));
    const lines = entries[i]![1].toString()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    lines[0]!.lead_id = 987654321;
    entries[i] = [entries[i]![0], Buffer.from(`${lines.map((l) => JSON.stringify(l)).join('\n')}\n`)];
    await expectRefused(await writeArchive(entries), /messages names leads 987654321/);
  });

  it('a file whose bytes do not match its record', async () => {
    const entries = (await withFreshId(await entriesOf())).map(([n, b]): [string, Buffer] =>
      n.startsWith('files/') && !n.endsWith('.ndjson') ? [n, Buffer.alloc(b.length, 1)] : [n, b],
    );
    await expectRefused(await writeArchive(entries), /do not match its size and MD5/);
  });

  it('a line that is not JSON', async () => {
    const entries = await withFreshId(await entriesOf());
    const i = entries.findIndex(([n]) => n.startsWith('customers/'));
    entries[i] = [entries[i]![0], Buffer.concat([entries[i]![1], Buffer.from('{"id": 1, broken\n')])];
    await expectRefused(await writeArchive(entries), /customers\/000001\.ndjson line \d+ is not JSON/);
  });
});

/** The entries with a new export id, so the archive is not "already imported". */
async function withFreshId(entries: Array<[string, Buffer]>): Promise<Array<[string, Buffer]>> {
  return entries.map(([n, b]) => {
    if (n !== 'manifest.json') return [n, b];
    const m = JSON.parse(b.toString()) as Record<string, unknown>;
    m.exportId = crypto.randomUUID();
    return [n, Buffer.from(JSON.stringify(m))];
  });
}
