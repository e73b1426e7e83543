import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import { fail, pass, reason, type CheckResult } from './check.js';

const PACKAGE = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { engines?: { node?: string } };

/** Below this much free space in the data folder's file system the check fails. */
const MIN_FREE_BYTES = 1024 ** 3;

/** Placeholders of deploy/parley.env all begin so; a value still holding one was never replaced. */
const EXAMPLE_MARK = 'change-me';

const GiB = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(1)} GiB`;

export function checkNode(version = process.versions.node): CheckResult {
  const wanted = PACKAGE.engines?.node ?? '>=20.19';
  const [minMajor = 0, minMinor = 0] = (/(\d+)\.(\d+)/.exec(wanted) ?? []).slice(1).map(Number);
  const [major = 0, minor = 0] = version.split('.').map(Number);
  if (major > minMajor || (major === minMajor && minor >= minMinor)) return pass('node', 'Node.js', `${version} (needs ${wanted})`);
  return fail(
    'node',
    'Node.js',
    `${version} is too old (needs ${wanted})`,
    'install Node.js 22 LTS (docs/deploy.md, "Node.js"), then `npm ci && npm run build` again',
  );
}

/** The data folder: present, a folder, writable by this user; and the free space around it. */
export function checkDataFolder(dataDir: string): CheckResult[] {
  const dir = path.resolve(dataDir);
  const title = 'Data folder';
  let stat: fs.Stats;
  try {
    stat = fs.statSync(dir);
  } catch (err) {
    return [
      fail(
        'data-folder',
        title,
        `${dir}: ${reason(err)}`,
        `create it for the service's user (install -d -o parley -g parley -m 700 ${dir}), or point PARLEY_DATA_DIR at the data folder`,
      ),
    ];
  }
  if (!stat.isDirectory()) {
    return [fail('data-folder', title, `${dir} is not a folder`, 'point PARLEY_DATA_DIR at a folder')];
  }
  const uid = process.getuid?.();
  const results: CheckResult[] = [];
  try {
    fs.accessSync(dir, fs.constants.R_OK | fs.constants.W_OK | fs.constants.X_OK);
    const asRoot =
      uid === 0 && stat.uid !== 0 ? ' (checked as root, who may write where the service cannot: run doctor as the service user)' : '';
    results.push(pass('data-folder', title, `${dir} is writable${asRoot}`));
  } catch (err) {
    results.push(
      fail(
        'data-folder',
        title,
        `${dir} is not writable by this user${uid === undefined ? '' : ` (uid ${uid})`}: ${reason(err)}`,
        `make the service's user own it (chown -R parley:parley ${dir}); under systemd it must be in the unit's ReadWritePaths (deploy/parley.service)`,
      ),
    );
  }
  results.push(checkFreeSpace(dir));
  return results;
}

function checkFreeSpace(dir: string): CheckResult {
  const { bavail, blocks, bsize } = fs.statfsSync(dir);
  const free = bavail * bsize;
  const detail = `${GiB(free)} free of ${GiB(blocks * bsize)} on the data folder's file system`;
  if (free >= MIN_FREE_BYTES) return pass('disk-space', 'Free disk space', detail);
  return fail(
    'disk-space',
    'Free disk space',
    `${detail}: under ${GiB(MIN_FREE_BYTES)}`,
    'free space (old backups, logs: journalctl --vacuum-size=200M) or grow the disk; a full disk stops every write',
  );
}

interface Secret {
  label: string;
  variable: string;
  /** The file the server generates into the data folder when the variable is unset; without one, optional. */
  file?: string;
}

const SECRETS: Secret[] = [
  { label: 'JWT signing secret', variable: 'PARLEY_JWT_SECRET', file: 'jwt-secret' },
  { label: 'credential encryption key', variable: 'PARLEY_ENCRYPTION_KEY', file: 'encryption-key' },
  { label: 'metrics token', variable: 'PARLEY_METRICS_TOKEN' },
  { label: 'VAPID private key', variable: 'PARLEY_VAPID_PRIVATE_KEY' },
];

/**
 * Every secret: set (by environment, or kept in the data folder as the server generated it), not a
 * placeholder of deploy/parley.env, long enough, and its file readable only by its owner. The
 * detail says only whether each is set and where.
 */
export function checkSecrets(env: NodeJS.ProcessEnv, config: Config): CheckResult {
  const found: string[] = [];
  const problems: string[] = [];
  const fixes = new Set<string>();
  for (const secret of SECRETS) {
    const value = env[secret.variable];
    if (value) {
      found.push(`${secret.label}: set (${secret.variable})`);
      if (value.toLowerCase().includes(EXAMPLE_MARK)) {
        problems.push(`${secret.variable} is still the example's placeholder`);
        fixes.add('put a fresh random value in place of each placeholder: openssl rand -base64 48');
      } else if (secret.file && value.length < 32) {
        problems.push(`${secret.variable} is shorter than 32 characters`);
        fixes.add('use a long random value: openssl rand -base64 48');
      }
      continue;
    }
    // An optional secret left unset turns its feature off (metrics) or is generated (VAPID).
    if (!secret.file) continue;
    const file = path.join(path.resolve(config.dataDir), secret.file);
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8').trim();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        problems.push(`no ${secret.label}: ${secret.variable} is unset and ${file} does not exist`);
        fixes.add(
          'start Parley once: it generates the missing ones into the data folder; with processes on several machines set PARLEY_JWT_SECRET and PARLEY_ENCRYPTION_KEY, each to one value on all',
        );
      } else {
        problems.push(`${file} cannot be read by this user: ${reason(err)}`);
        fixes.add("run doctor as the service's user, with its environment (docs/deploy.md)");
      }
      continue;
    }
    found.push(`${secret.label}: kept in ${file}`);
    if (text.length < 32) {
      problems.push(`${file} holds no usable secret`);
      fixes.add(`remove ${file} only if no credential was stored with it yet, and restart to have a new one generated`);
    }
    const mode = fs.statSync(file).mode & 0o777;
    if (mode & 0o077) {
      problems.push(`${file} is readable by other users (mode ${mode.toString(8)})`);
      fixes.add(`chmod 600 ${file}`);
    }
  }
  for (const [variable, raw] of [
    ['DATABASE_URL', env.DATABASE_URL],
    ['PARLEY_SMTP_URL', env.PARLEY_SMTP_URL],
  ] as const) {
    if (raw && passwordOf(raw).toLowerCase().includes(EXAMPLE_MARK)) {
      problems.push(`the password in ${variable} is still the example's placeholder`);
      fixes.add(`set the real password in ${variable}`);
    }
  }
  const detail = found.join('; ');
  if (!problems.length) return pass('secrets', 'Secrets', detail);
  return fail('secrets', 'Secrets', detail ? `${problems.join('; ')} (${detail})` : problems.join('; '), [...fixes].join('; '));
}

function passwordOf(url: string): string {
  try {
    return decodeURIComponent(new URL(url).password);
  } catch {
    return '';
  }
}
