import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli.js';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { seedAccount } from './helpers/account-archive.js';
import { DIALECT } from './helpers/database.js';
import { progressReporter } from '../src/cli-progress.js';

// The CLI works on the harness's own storage: its data folder (SQLite file and files) or its
// PostgreSQL schema, while the harness's app keeps serving.
let h: Harness;
let env: Record<string, string>;
let owner: SignedUp;
let seeded: Awaited<ReturnType<typeof seedAccount>>;
let work: string;

beforeAll(async () => {
  h = await createHarness({ sqliteFile: true });
  // The CLI runs with the server's environment, file storage included (the harness keeps files on
  // disk even when its database is PostgreSQL, where the CLI's default would be the database).
  env = {
    PARLEY_DATA_DIR: h.dataDir,
    PARLEY_JWT_SECRET: h.config.jwtSecret!,
    PARLEY_LOG_LEVEL: 'warn',
    PARLEY_FILE_STORAGE: h.config.fileStorage,
    ...(h.database.url ? { DATABASE_URL: h.database.url } : {}),
  };
  owner = await h.signUp();
  seeded = await seedAccount(h, owner);
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-cli-data-'));
});
afterAll(async () => {
  await h?.close();
  fs.rmSync(work, { recursive: true, force: true });
});

async function cli(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const sink = { log: (...a: unknown[]) => void out.push(a.join(' ')), error: (...a: unknown[]) => void err.push(a.join(' ')) };
  const code = await runCli(argv, env, sink as unknown as Console);
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('parley export / import', () => {
  it('exports with progress lines, refuses to overwrite, and an import of it is refused here with nothing changed (logins taken)', async () => {
    const file = path.join(work, 'account.tar.gz');
    const run = await cli('export', '--account', String(owner.accountId), '--out', file);
    expect(run.code, run.err).toBe(0);
    expect(run.out).toMatch(new RegExp(`exported account ${owner.accountId} to .* in \\d+\\.\\d s: employees 3, .*messages 9.*; 1 files`));
    // Not a terminal: plain lines at each tenth, ending at 100%.
    expect(run.err.split('\n').at(-1)).toMatch(/^export: 100% \(\d+\/\d+\)$/);
    expect(fs.existsSync(`${file}.part`)).toBe(false);
    expect((await cli('export', '--account', String(owner.accountId), '--out', file)).err).toMatch(/exists: choose a new file/);
    const accounts = await h.services.accounts.list();
    const refused = await cli('import', file);
    expect(refused).toMatchObject({ code: 1, err: expect.stringMatching(/^parley: Employee logins already used/) });
    expect((await h.services.accounts.list()).length).toBe(accounts.length);
  });

  it('refuses an unknown account and a missing file with a message', async () => {
    expect((await cli('export', '--account', '99999999', '--out', path.join(work, 'x.tar.gz'))).err).toBe(
      'parley: Account 99999999 does not exist',
    );
    expect(fs.existsSync(path.join(work, 'x.tar.gz'))).toBe(false);
    expect((await cli('import', path.join(work, 'missing.tar.gz'))).err).toMatch(/does not exist/);
    expect((await cli('export', '--account', 'abc', '--out', 'y')).err).toMatch(/--account must be an integer/);
  });
});

describe('parley backup and the restore procedure of docs/operations.md', () => {
  it('backs up while the app serves; extracting the backup into an empty data folder restores the installation', async () => {
    const file = path.join(work, 'backup.tar.gz');
    // The app keeps serving while the backup runs.
    const writes = Promise.all(
      Array.from({ length: 20 }, () => h.request({ method: 'GET', url: '/v1.3/account/me', token: owner.access })),
    );
    const run = await cli('backup', '--out', file);
    await writes;
    expect(run.code, run.err).toBe(0);
    expect(run.out).toMatch(/backup written to .* \(\d+ bytes, 1 files\)/);
    expect(fs.statSync(file).mode & 0o077).toBe(0);

    // docs/operations.md, "Restoring a backup": stop, extract into an empty folder, start on it.
    const restored = path.join(work, 'restored');
    fs.mkdirSync(restored);
    execFileSync('tar', ['-xzf', file, '-C', restored]);
    const listing = fs.readdirSync(restored).sort();
    // The JWT secret comes from the environment here, so the folder holds none to copy.
    expect(listing).toEqual(
      DIALECT === 'sqlite'
        ? ['backup.json', 'encryption-key', 'files', 'parley.db']
        : ['backup.json', 'encryption-key', 'files', 'parley.dump'],
    );
    if (DIALECT === 'postgres') {
      // pg_dump's snapshot of this installation's schema alone: its tables, with the account's messages.
      const schema = new URL(h.database.url!).searchParams.get('options')!.split('=')[1];
      const contents = execFileSync('pg_restore', ['--list', path.join(restored, 'parley.dump')], { encoding: 'utf8' });
      expect(contents).toMatch(new RegExp(`TABLE DATA ${schema} messages `));
      expect(contents).not.toMatch(/TABLE DATA public /);
      // Restored into a fresh database, the search triggers' extension is created with the schema.
      expect(contents).toMatch(/EXTENSION - unaccent/);
      const rows = execFileSync(
        'pg_restore',
        ['--data-only', `--schema=${schema}`, '--table=messages', '-f', '-', path.join(restored, 'parley.dump')],
        {
          encoding: 'utf8',
        },
      );
      const copied = rows.split('\n').filter((line) => line.split('\t').includes(String(owner.accountId)));
      expect(copied.length).toBeGreaterThanOrEqual(9);
      return;
    }
    {
      const restoredEnv = { ...env, PARLEY_DATA_DIR: restored };
      const list = await runCli(['account:list'], restoredEnv, {
        log: (t: string) => expect(t).toContain(owner.login),
        error: () => {},
      } as unknown as Console);
      expect(list).toBe(0);
      const { openCore } = await import('../src/boot.js');
      const { loadConfig } = await import('../src/config.js');
      const pino = (await import('pino')).default;
      const core = await openCore(loadConfig(restoredEnv), pino({ level: 'silent' }));
      try {
        const n = await core.db.kysely.selectFrom('messages').select('id').where('account_id', '=', owner.accountId).execute();
        expect(n).toHaveLength(9);
        const download = await core.services.files.download(seeded.fileId);
        expect(download).toBeDefined();
        expect(await download!.open()).toBeDefined();
      } finally {
        await core.db.close();
      }
    }
  });
});

describe('parley backup --dir --keep (the nightly unit, deploy/parley-backup.service)', () => {
  it('writes dated copies into the folder and keeps only the newest ones, leaving other files alone', async () => {
    const dir = path.join(work, 'nightly');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'notes.txt'), 'kept');
    fs.writeFileSync(path.join(dir, 'parley-backup-manual.tar.gz'), 'not one of the dated copies');
    const written: string[] = [];
    for (let i = 0; i < 3; i++) {
      const run = await cli('backup', '--dir', dir, '--keep', '2');
      expect(run.code, run.err).toBe(0);
      const name = /backup written to (\S+)/.exec(run.out)![1];
      expect(path.basename(name)).toMatch(/^parley-backup-\d{8}-\d{6}-\d{3}\.tar\.gz$/);
      written.push(path.basename(name));
      if (i === 2) expect(run.out).toContain(`removed 1 older (${written[0]})`);
    }
    expect(fs.readdirSync(dir).sort()).toEqual([...written.slice(1), 'notes.txt', 'parley-backup-manual.tar.gz'].sort());
    const listing = execFileSync('tar', ['-tzf', path.join(dir, written[2])], { encoding: 'utf8' });
    expect(listing).toContain('backup.json');
  });

  it('refuses --keep without --dir, a --keep below 1, and --out with --dir', async () => {
    expect((await cli('backup', '--out', path.join(work, 'k.tar.gz'), '--keep', '3')).err).toBe(
      'parley: --keep takes a number of at least 1, with --dir',
    );
    expect((await cli('backup', '--dir', path.join(work, 'k'), '--keep', '0')).err).toBe(
      'parley: --keep takes a number of at least 1, with --dir',
    );
    expect((await cli('backup', '--dir', path.join(work, 'k'), '--out', path.join(work, 'k.tar.gz'))).err).toBe(
      'parley: give --out or --dir, not both',
    );
    expect(fs.existsSync(path.join(work, 'k'))).toBe(false);
    expect(fs.existsSync(path.join(work, 'k.tar.gz'))).toBe(false);
  });
});

describe('parley account:delete', () => {
  it('asks for confirmation, then removes every row and stored file of the account and nothing of another', async () => {
    const other = await h.signUp();
    await seedAccount(h, other);
    const victim = await h.signUp();
    const { fileId } = await seedAccount(h, victim);
    // An event of each account: on PostgreSQL no foreign key takes the victim's with its account
    // (migration 0073), the deletion does.
    for (const { accountId } of [victim, other]) {
      await h.database.db.kysely
        .insertInto('events')
        .values({ account_id: accountId, type: 'lead.changed', lead_id: null, payload: '{}', created_at: Date.now() })
        .execute();
    }
    const events = (accountId: number) =>
      h.database.db.kysely.selectFrom('events').select('id').where('account_id', '=', accountId).execute();
    expect((await events(victim.accountId)).length).toBeGreaterThan(0);
    const storageKey = (
      await h.database.db.kysely.selectFrom('files').select('storage_key').where('id', '=', fileId).executeTakeFirstOrThrow()
    ).storage_key;
    const blob = path.join(h.dataDir, 'files', storageKey.slice(0, 2), storageKey);
    expect(fs.existsSync(blob)).toBe(true);
    const countOther = await rowsOf(other.accountId);

    expect((await cli('account:delete', String(victim.accountId))).err).toMatch(/--confirm \d+ is required/);
    const run = await cli('account:delete', String(victim.accountId), '--confirm', String(victim.accountId));
    expect(run.code, run.err).toBe(0);
    expect(run.out).toMatch(new RegExp(`deleted account ${victim.accountId}: \\d+ rows and 1 files`));
    expect(await rowsOf(victim.accountId)).toBe(0);
    expect(await events(victim.accountId)).toEqual([]);
    expect(fs.existsSync(blob)).toBe(false);
    expect(await rowsOf(other.accountId)).toBe(countOther);
    const login = await h.request({ method: 'POST', url: '/v1.3/auth/login', payload: { login: victim.login, pass: victim.pass } });
    expect(login.statusCode).not.toBe(200);
    expect((await cli('account:delete', String(victim.accountId), '--confirm', String(victim.accountId))).err).toMatch(/does not exist/);
  });
});

describe('progress', () => {
  it('draws a bar in place on a terminal, at most every 100 ms, and ends its line', () => {
    let text = '';
    let t = 0;
    const bar = progressReporter(
      'export',
      { isTTY: true, write: (s: string) => (text += s) },
      () => {},
      () => t,
    );
    bar.update(1, 4);
    t = 50;
    bar.update(2, 4);
    t = 200;
    bar.update(4, 4);
    bar.end();
    expect(text).toBe(`\rexport [${'#'.repeat(8)}${'-'.repeat(22)}]  25% 1/4\rexport [${'#'.repeat(30)}] 100% 4/4\n`);
  });
});

async function rowsOf(accountId: number): Promise<number> {
  const { countAccountRows } = await import('../src/domain/retention/retention.repo.js');
  return countAccountRows(h.database.db.kysely, accountId);
}
