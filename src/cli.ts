import { parseArgs } from 'node:util';
import pino from 'pino';
import { loadConfig, ConfigError } from './config.js';
import { openCore } from './boot.js';
import { AppError } from './domain/errors.js';
import type { Plan } from './domain/accounts/plan.js';
import type { Services } from './services.js';
import { runWorkersUntilSignal } from './background.js';
import { BRIDGE_USAGE, runBridgeCli } from './connectors/bridge-cli.js';
import { CliError, bool, integer, required, type CliOutput } from './cli-kit.js';
import { DATA_COMMANDS, DATA_USAGE } from './cli-data.js';
import { DOCTOR_USAGE, runDoctorCli } from './doctor/doctor.js';
import { MIGRATE_USAGE, runMigrate } from './cli-migrate.js';

const USAGE = `Parley operator CLI: works on the storage the server uses (PARLEY_DATA_DIR or DATABASE_URL).

Usage: parley <command> [options]

Commands:
  account:create --login <email> --password <pass> --name <name>
                              create an account with its owner
  account:list                list accounts with their owner, status and plan
  plan:set <accountId> [--expiration <ISO date>] [--trial true|false] [--value <decimal>]
           [--currency <code>] [--period <months>] [--subscription true|false] [--price <int>]
                              change an account's plan
  password:reset --login <email> --password <pass>
                              set a new owner password (signs the owner out everywhere)
  worker                      run the background work (webhook delivery, Telegram polling) in this
                              process until SIGTERM (with PARLEY_WORKERS=off on servers)
${BRIDGE_USAGE}
${DATA_USAGE}${MIGRATE_USAGE}${DOCTOR_USAGE}  help                        this text
`;

type Command = (services: Services, args: string[], out: CliOutput) => Promise<string>;

const COMMANDS: Record<string, Command> = {
  ...DATA_COMMANDS,
  migrate: runMigrate,
  worker: (services) => runWorkersUntilSignal(services),

  async 'account:create'(services, args) {
    const { values } = parseArgs({
      args,
      options: { login: { type: 'string' }, password: { type: 'string' }, name: { type: 'string' } },
    });
    const pass = required(values, 'password');
    if (pass.length < 8) throw new CliError('--password must have at least 8 characters');
    const login = required(values, 'login');
    if (!/^[^\s@]+@[^\s@]+$/.test(login)) throw new CliError('--login must be an e-mail address');
    const owner = await services.accounts.createWithOwner({ login, pass, name: required(values, 'name') });
    return `created account ${owner.account_id} with owner ${owner.login} (user ${owner.id})`;
  },

  async 'account:list'(services) {
    const rows = await services.accounts.list();
    if (!rows.length) return 'no accounts';
    const lines = rows.map(
      (a) =>
        `${a.id}\t${a.name}\t${a.owner?.login ?? '-'}\t${a.status}\texpires ${new Date(a.plan.expiration).toISOString()}${a.plan.trial ? '\ttrial' : ''}`,
    );
    return ['id\tname\towner\tstatus\tplan', ...lines].join('\n');
  },

  async 'plan:set'(services, args) {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: {
        expiration: { type: 'string' },
        trial: { type: 'string' },
        value: { type: 'string' },
        currency: { type: 'string' },
        period: { type: 'string' },
        subscription: { type: 'string' },
        price: { type: 'string' },
      },
    });
    const id = integer('accountId', positionals[0] ?? '');
    const patch: Partial<Plan> = {};
    if (values.expiration !== undefined) {
      const ms = Date.parse(values.expiration);
      if (Number.isNaN(ms)) throw new CliError('--expiration must be an ISO 8601 date');
      patch.expiration = ms;
    }
    if (values.trial !== undefined) patch.trial = bool('trial', values.trial);
    if (values.subscription !== undefined) patch.subscription = bool('subscription', values.subscription);
    if (values.value !== undefined) {
      if (!/^-?\d+(\.\d+)?$/.test(values.value)) throw new CliError('--value must be a decimal number');
      patch.value = values.value;
    }
    if (values.currency !== undefined) patch.currency = values.currency;
    if (values.period !== undefined) patch.period = integer('period', values.period);
    if (values.price !== undefined) patch.price = integer('price', values.price);
    const plan = await services.accounts.setPlan(id, patch);
    return `account ${id}: plan ${JSON.stringify({ ...plan, expiration: new Date(plan.expiration).toISOString() })}`;
  },

  async 'password:reset'(services, args) {
    const { values } = parseArgs({ args, options: { login: { type: 'string' }, password: { type: 'string' } } });
    const pass = required(values, 'password');
    if (pass.length < 8) throw new CliError('--password must have at least 8 characters');
    const user = await services.accounts.resetOwnerPassword(required(values, 'login'), pass);
    return `password of ${user.login} reset; existing sessions are signed out`;
  },
};

/** Runs one command; returns the exit code. Exported for tests, which pass their own config. */
export async function runCli(argv: string[], env: NodeJS.ProcessEnv = process.env, out = console): Promise<number> {
  const [name, ...args] = argv;
  if (!name || name === 'help' || name === '--help' || name === '-h') {
    out.log(USAGE);
    return name ? 0 : 1;
  }
  // A connector talks to Parley over the network, not to its database.
  if (name === 'bridge') return runBridgeCli(args, env, out);
  // Checks the installation without opening it the usual way, which would migrate it.
  if (name === 'doctor') return runDoctorCli(args, env, out);
  const command = COMMANDS[name];
  if (!command) {
    out.error(`parley: unknown command "${name}"\n\n${USAGE}`);
    return 1;
  }
  let core;
  try {
    const config = loadConfig(env);
    core = await openCore(config, pino({ level: 'warn' }, pino.destination(2)));
    out.log(await command(core.services, args, out));
    return 0;
  } catch (err) {
    if (err instanceof CliError || err instanceof ConfigError || err instanceof AppError) {
      out.error(`parley: ${err.message}`);
      return 1;
    }
    if (err instanceof TypeError && (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      out.error(`parley: ${err.message}`);
      return 1;
    }
    throw err;
  } finally {
    await core?.db.close();
  }
}
