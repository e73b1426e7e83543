import path from 'node:path';

/**
 * Every setting Parley reads, from the environment, with its default. The README's configuration
 * table lists the same names; keep the two in step.
 */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** postgres://... selects PostgreSQL; anything else (or nothing) keeps the embedded SQLite file. */
  databaseUrl: string | undefined;
  /** Explicit JWT secret; when absent one is generated once and kept in the data folder. */
  jwtSecret: string | undefined;
  signup: 'open' | 'closed';
  logLevel: string;
  /** Token lifetimes in seconds. */
  accessTtl: number;
  refreshTtl: number;
  pluginTtl: number;
  bodyLimit: number;
  /** Login brute-force limits. */
  loginMaxPerIp: number;
  loginMaxFailuresPerLogin: number;
  loginWindowSeconds: number;
  /** API requests per token and minute; 0 turns the limit off (benchmarks only). */
  apiRateLimitPerMinute: number;
  defaultPlan: DefaultPlan;
  publicUrl: string | undefined;
  /** Trust X-Forwarded-* from a reverse proxy (for client IPs in rate limits). */
  trustProxy: boolean;
}

export interface DefaultPlan {
  trial: boolean;
  /** Days from account creation to `expiration`. */
  days: number;
  value: string;
  currency: string;
  period: number;
  subscription: boolean;
  price: number;
}

export const DEFAULT_PLAN: DefaultPlan = {
  trial: false,
  days: 36500,
  value: '0.00',
  currency: 'USD',
  period: 1,
  subscription: false,
  price: 0,
};

type Env = Record<string, string | undefined>;

export class ConfigError extends Error {}

function int(env: Env, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) {
    throw new ConfigError(`${name} must be an integer >= ${min}, got "${raw}"`);
  }
  return value;
}

function parsePlan(raw: string | undefined): DefaultPlan {
  if (!raw) return DEFAULT_PLAN;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError('PARLEY_DEFAULT_PLAN must be a JSON object');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError('PARLEY_DEFAULT_PLAN must be a JSON object');
  }
  const plan = { ...DEFAULT_PLAN, ...(parsed as Partial<DefaultPlan>) };
  if (typeof plan.trial !== 'boolean' || !Number.isInteger(plan.days) || plan.days < 0) {
    throw new ConfigError('PARLEY_DEFAULT_PLAN: trial must be a boolean and days an integer >= 0');
  }
  if (!/^-?\d+(\.\d+)?$/.test(String(plan.value))) {
    throw new ConfigError('PARLEY_DEFAULT_PLAN: value must be a decimal string');
  }
  plan.value = String(plan.value);
  return plan;
}

export function loadConfig(env: Env = process.env): Config {
  const signup = env.PARLEY_SIGNUP ?? 'closed';
  if (signup !== 'open' && signup !== 'closed') {
    throw new ConfigError(`PARLEY_SIGNUP must be "open" or "closed", got "${signup}"`);
  }
  return {
    port: int(env, 'PORT', 8080),
    host: env.HOST || '127.0.0.1',
    dataDir: path.resolve(env.PARLEY_DATA_DIR || './data'),
    databaseUrl: env.DATABASE_URL || undefined,
    jwtSecret: env.PARLEY_JWT_SECRET || undefined,
    signup,
    logLevel: env.PARLEY_LOG_LEVEL || env.LOG_LEVEL || 'info',
    accessTtl: int(env, 'PARLEY_ACCESS_TTL', 3600, 1),
    refreshTtl: int(env, 'PARLEY_REFRESH_TTL', 30 * 24 * 3600, 1),
    pluginTtl: int(env, 'PARLEY_PLUGIN_TTL', 3600, 1),
    bodyLimit: int(env, 'PARLEY_BODY_LIMIT', 1024 * 1024, 1024),
    loginMaxPerIp: int(env, 'PARLEY_LOGIN_MAX_PER_IP', 30, 1),
    loginMaxFailuresPerLogin: int(env, 'PARLEY_LOGIN_MAX_FAILURES', 10, 1),
    loginWindowSeconds: int(env, 'PARLEY_LOGIN_WINDOW', 900, 1),
    apiRateLimitPerMinute: int(env, 'PARLEY_API_RATE_LIMIT', 6000, 0),
    defaultPlan: parsePlan(env.PARLEY_DEFAULT_PLAN),
    publicUrl: env.PARLEY_PUBLIC_URL || undefined,
    trustProxy: env.PARLEY_TRUST_PROXY === '1' || env.PARLEY_TRUST_PROXY === 'true',
  };
}

export function isPostgresUrl(url: string | undefined): url is string {
  return !!url && /^postgres(ql)?:\/\//i.test(url);
}
