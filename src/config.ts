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
  /** Secret (>= 32 characters) that encrypts integration credentials at rest; when absent one is
   *  generated once and kept in the data folder (`encryption-key`). Changing it makes stored
   *  credentials unreadable. */
  encryptionKey: string | undefined;
  signup: 'open' | 'closed';
  logLevel: string;
  /** Token lifetimes in seconds. */
  accessTtl: number;
  refreshTtl: number;
  pluginTtl: number;
  bodyLimit: number;
  /** Largest file `POST /messaging/upload` accepts, in bytes (PARLEY_UPLOAD_LIMIT, default 50 MiB); above it 413. */
  uploadLimit: number;
  /** Login brute-force limits. */
  loginMaxPerIp: number;
  loginMaxFailuresPerLogin: number;
  loginWindowSeconds: number;
  /** API requests per token and minute; 0 turns the limit off (benchmarks only). */
  apiRateLimitPerMinute: number;
  defaultPlan: DefaultPlan;
  publicUrl: string | undefined;
  /** Outgoing mail (invitations): `smtp://user:pass@host:port` or `smtps://...`; unset writes mail to the log. */
  smtpUrl: string | undefined;
  smtpFrom: string;
  /** Lifetime of an invitation link, in seconds. */
  invitationTtl: number;
  /** Trust X-Forwarded-* from a reverse proxy (for client IPs in rate limits). */
  trustProxy: boolean;
  /** Webhooks (decisions.md §7): see README. Private/loopback targets allowed (development, tests). */
  webhookAllowPrivate: boolean;
  /** Factor on every retry delay (tests compress the schedule). */
  webhookRetryScale: number;
  /** Delivery timeout in milliseconds. */
  webhookTimeoutMs: number;
  /**
   * Deliveries in flight per process, and per endpoint. One endpoint takes at most its concurrency
   * per round trip (16 at 100 ms: 160/s); larger rounds also make the worker's batches larger.
   */
  webhookConcurrency: number;
  webhookEndpointConcurrency: number;
  /** `on`: background workers (webhook delivery) run inside the server; `off`: run `parley worker`. */
  workers: 'on' | 'off';
  /** Safety-net poll of the outbox (ms) behind the in-process and LISTEN/NOTIFY nudges. */
  eventsPollMs: number;
  /** How long sending waits for a channel's provider before answering 504, in milliseconds. */
  sendTimeoutMs: number;
  /** Site widget (issue 8): new visitor sessions per IP per 10 minutes; messages per visitor per
   *  minute (per IP: 3 times that); largest visitor attachment in bytes; whether /demo/widget is served. */
  widgetSessionsPerIp: number;
  widgetMessagesPerMinute: number;
  widgetUploadLimit: number;
  widgetDemo: boolean;
  /** Telegram Bot API root (PARLEY_TELEGRAM_API_URL, default https://api.telegram.org): tests and air-gapped installs point elsewhere. */
  telegramApiUrl: string;
  /** Viber REST Bot API root (PARLEY_VIBER_API_URL, default https://chatapi.viber.com/pa). */
  viberApiUrl: string;
  /** Telegram long polling: seconds one `getUpdates` waits for updates (PARLEY_TELEGRAM_POLL_TIMEOUT, default 25). */
  telegramPollTimeout: number;
  /** SQLite: per-statement timings written to this file when Parley stops (PARLEY_SQL_PROFILE; a debugging aid). */
  sqlProfile?: string;
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

function smtpUrl(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  if (!/^smtps?:\/\/[^/]/i.test(raw)) throw new ConfigError('PARLEY_SMTP_URL must look like smtp://user:pass@host:port');
  return raw;
}

function encryptionKey(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  if (raw.length < 32) throw new ConfigError('PARLEY_ENCRYPTION_KEY must be at least 32 characters long');
  return raw;
}

function positiveNumber(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new ConfigError(`${name} must be a number > 0, got "${raw}"`);
  return value;
}

function onOff(env: Env, name: string): 'on' | 'off' {
  const raw = env[name] || 'on';
  if (raw !== 'on' && raw !== 'off') throw new ConfigError(`${name} must be "on" or "off", got "${raw}"`);
  return raw;
}

/** A provider's API root: an http(s) URL, kept without a trailing slash. */
function apiRoot(env: Env, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  if (!/^https?:\/\/[^/]/i.test(raw)) throw new ConfigError(`${name} must be an http(s) URL, got "${raw}"`);
  return raw.replace(/\/+$/, '');
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
    encryptionKey: encryptionKey(env.PARLEY_ENCRYPTION_KEY),
    signup,
    logLevel: env.PARLEY_LOG_LEVEL || env.LOG_LEVEL || 'info',
    accessTtl: int(env, 'PARLEY_ACCESS_TTL', 3600, 1),
    refreshTtl: int(env, 'PARLEY_REFRESH_TTL', 30 * 24 * 3600, 1),
    pluginTtl: int(env, 'PARLEY_PLUGIN_TTL', 3600, 1),
    bodyLimit: int(env, 'PARLEY_BODY_LIMIT', 1024 * 1024, 1024),
    uploadLimit: int(env, 'PARLEY_UPLOAD_LIMIT', 50 * 1024 * 1024, 1),
    loginMaxPerIp: int(env, 'PARLEY_LOGIN_MAX_PER_IP', 30, 1),
    loginMaxFailuresPerLogin: int(env, 'PARLEY_LOGIN_MAX_FAILURES', 10, 1),
    loginWindowSeconds: int(env, 'PARLEY_LOGIN_WINDOW', 900, 1),
    apiRateLimitPerMinute: int(env, 'PARLEY_API_RATE_LIMIT', 6000, 0),
    defaultPlan: parsePlan(env.PARLEY_DEFAULT_PLAN),
    publicUrl: env.PARLEY_PUBLIC_URL || undefined,
    smtpUrl: smtpUrl(env.PARLEY_SMTP_URL),
    smtpFrom: env.PARLEY_SMTP_FROM || 'Parley <parley@localhost>',
    invitationTtl: int(env, 'PARLEY_INVITATION_TTL', 7 * 24 * 3600, 60),
    trustProxy: env.PARLEY_TRUST_PROXY === '1' || env.PARLEY_TRUST_PROXY === 'true',
    webhookAllowPrivate: env.PARLEY_WEBHOOK_ALLOW_PRIVATE === '1' || env.PARLEY_WEBHOOK_ALLOW_PRIVATE === 'true',
    webhookRetryScale: positiveNumber(env, 'PARLEY_WEBHOOK_RETRY_SCALE', 1),
    webhookTimeoutMs: int(env, 'PARLEY_WEBHOOK_TIMEOUT_MS', 15_000, 1),
    webhookConcurrency: int(env, 'PARLEY_WEBHOOK_CONCURRENCY', 128, 1),
    webhookEndpointConcurrency: int(env, 'PARLEY_WEBHOOK_ENDPOINT_CONCURRENCY', 16, 1),
    workers: onOff(env, 'PARLEY_WORKERS'),
    eventsPollMs: int(env, 'PARLEY_EVENTS_POLL_MS', 1000, 10),
    sendTimeoutMs: int(env, 'PARLEY_SEND_TIMEOUT_MS', 15_000, 1),
    widgetSessionsPerIp: int(env, 'PARLEY_WIDGET_SESSIONS_PER_IP', 20, 1),
    widgetMessagesPerMinute: int(env, 'PARLEY_WIDGET_MESSAGES_PER_MINUTE', 20, 1),
    widgetUploadLimit: int(env, 'PARLEY_WIDGET_UPLOAD_LIMIT', 10 * 1024 * 1024, 1),
    widgetDemo: onOff(env, 'PARLEY_WIDGET_DEMO') === 'on',
    telegramApiUrl: apiRoot(env, 'PARLEY_TELEGRAM_API_URL', 'https://api.telegram.org'),
    viberApiUrl: apiRoot(env, 'PARLEY_VIBER_API_URL', 'https://chatapi.viber.com/pa'),
    telegramPollTimeout: int(env, 'PARLEY_TELEGRAM_POLL_TIMEOUT', 25, 0),
    sqlProfile: env.PARLEY_SQL_PROFILE || undefined,
  };
}

export function isPostgresUrl(url: string | undefined): url is string {
  return !!url && /^postgres(ql)?:\/\//i.test(url);
}
