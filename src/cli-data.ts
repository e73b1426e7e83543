import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Services } from './services.js';
import { CliError, integer, required, type CliOutput } from './cli-kit.js';
import { progressReporter } from './cli-progress.js';
import { exportAccount } from './domain/portability/account-exporter.js';
import { importAccount } from './domain/portability/account-importer.js';
import { backupName, pruneBackups, runBackup } from './domain/portability/backup.js';

/** The CLI's data commands: export, import, backup, account deletion. */
export const DATA_USAGE = `  export --account <id> --out <file>
                              write the account's archive (docs/export-format.md) to a new file
  import <file>               import an archive into a new account (all or nothing; a re-run of an
                              imported archive changes nothing)
  backup --out <file>         consistent copy of the database (on PostgreSQL made by pg_dump,
                              docs/operations.md), the files and secrets, while the server serves
  backup --dir <folder> [--keep <n>]
                              the same into a new parley-backup-<time>.tar.gz in the folder; with
                              --keep, the n newest of those are kept and older ones removed
  account:delete <accountId> --confirm <accountId>
                              remove every row and file of the account
`;

type DataCommand = (services: Services, args: string[], out: CliOutput) => Promise<string>;

const seconds = (startedMs: number) => ((performance.now() - startedMs) / 1000).toFixed(1);

function freshFile(file: string): void {
  if (fs.existsSync(file)) throw new CliError(`${file} exists: choose a new file`);
}

function bar(label: string, out: CliOutput) {
  return progressReporter(label, process.stderr, (line) => out.error(line));
}

export const DATA_COMMANDS: Record<string, DataCommand> = {
  async export(services, args, out) {
    const { values } = parseArgs({ args, options: { account: { type: 'string' }, out: { type: 'string' } } });
    const accountId = integer('account', required(values, 'account'));
    const file = required(values, 'out');
    freshFile(file);
    const started = performance.now();
    const progress = bar('export', out);
    // Written beside the target and renamed when complete: a failed export leaves no archive.
    const tmp = `${file}.part`;
    let summary;
    try {
      summary = await exportAccount(services.deps.db.kysely, services.files.storage, accountId, fs.createWriteStream(tmp), progress.update);
      fs.renameSync(tmp, file);
    } catch (err) {
      fs.rmSync(tmp, { force: true });
      throw err;
    } finally {
      progress.end();
    }
    const counts = Object.entries(summary.counts)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
    const missing = summary.missingFiles ? `; ${summary.missingFiles} files had no stored bytes` : '';
    return `exported account ${accountId} to ${file} (${fs.statSync(file).size} bytes) in ${seconds(started)} s: ${counts}; ${summary.files} files${missing}`;
  },

  async import(services, args, out) {
    const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { in: { type: 'string' } } });
    const file = values.in ?? positionals[0];
    if (!file) throw new CliError('the archive to import is required: parley import <file>');
    if (!fs.existsSync(file)) throw new CliError(`${file} does not exist`);
    const started = performance.now();
    const progress = bar('import', out);
    let report;
    try {
      report = await importAccount(
        services.deps.db.kysely,
        services.files.storage,
        fs.createReadStream(file),
        services.deps.clock,
        progress.update,
      );
    } finally {
      progress.end();
    }
    if (report.alreadyImported) {
      return `archive ${report.exportId} was imported before, as account ${report.accountId}: nothing changed`;
    }
    const counts = Object.entries(report.counts)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
    return [
      `imported archive ${report.exportId} (account ${report.sourceAccountId} there) as account ${report.accountId} in ${seconds(started)} s`,
      `records: ${counts}; files ${report.files}${report.filesWithoutBytes ? `, ${report.filesWithoutBytes} without bytes` : ''}`,
      ...(report.referencesCleared ? [`references to records the archive did not hold, set to none: ${report.referencesCleared}`] : []),
      "employees have no password: set the owner's with `parley password:reset`; integrations need their credentials again and webhooks have new secrets",
    ].join('\n');
  },

  async backup(services, args, out) {
    const { values } = parseArgs({ args, options: { out: { type: 'string' }, dir: { type: 'string' }, keep: { type: 'string' } } });
    if (values.out !== undefined && values.dir !== undefined) throw new CliError('give --out or --dir, not both');
    const keep = values.keep === undefined ? undefined : integer('keep', values.keep);
    if (keep !== undefined && (values.dir === undefined || keep < 1)) throw new CliError('--keep takes a number of at least 1, with --dir');
    let file: string;
    if (values.dir !== undefined) {
      fs.mkdirSync(values.dir, { recursive: true, mode: 0o700 });
      file = path.join(values.dir, backupName(new Date(services.deps.clock.now())));
    } else {
      file = required(values, 'out');
    }
    freshFile(file);
    const started = performance.now();
    const progress = bar('backup', out);
    // In a folder of dated copies a killed run must not leave a partial file under a copy's name.
    const target = values.dir !== undefined ? `${file}.part` : file;
    let result;
    try {
      result = await runBackup(services.deps.config, services.deps.db, target, progress.update);
      if (target !== file) fs.renameSync(target, file);
    } finally {
      progress.end();
    }
    const removed = values.dir !== undefined && keep !== undefined ? pruneBackups(values.dir, keep) : [];
    const pruned = removed.length ? `; removed ${removed.length} older (${removed.join(', ')})` : '';
    return `backup written to ${file} (${fs.statSync(file).size} bytes, ${result.files} files) in ${seconds(started)} s${pruned}`;
  },

  async 'account:delete'(services, args, out) {
    const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { confirm: { type: 'string' } } });
    const accountId = integer('accountId', positionals[0] ?? '');
    if (values.confirm !== String(accountId)) throw new CliError(`--confirm ${accountId} is required: deletion cannot be undone`);
    const progress = bar('delete', out);
    let removed;
    try {
      removed = await services.retention.deleteAccount(accountId, progress.update);
    } finally {
      progress.end();
    }
    return `deleted account ${accountId}: ${removed.rows} rows and ${removed.files} files`;
  },
};
