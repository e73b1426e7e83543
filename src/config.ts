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
  /** Hours a finished account export stays downloadable (PARLEY_EXPORT_TTL_HOURS, default 24). */
  exportTtlHours: number;
  /** Minutes between retention sweeps (PARLEY_RETENTION_INTERVAL_MINUTES, default 60). */
  retentionIntervalMinutes: number;
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
  /** Webhooks (docs/api/webhooks.md): see README. Private/loopback targets allowed (development, tests). */
  webhookAllowPrivate: boolean;
  /** Factor on every retry delay (tests compress the schedule). */
  webhookRetryScale: number;
  /** Delivery timeout in milliseconds. */
  webhookTimeoutMs: number;
  /** Seconds SIGTERM/SIGINT may take in all before the process exits anyway (PARLEY_SHUTDOWN_TIMEOUT, default 8). */
  shutdownTimeoutSeconds: number;
  /**
   * Deliveries in flight per process, and per endpoint. One endpoint takes at most its concurrency
   * per round trip (16 at 100 ms: 160/s); larger rounds also make the worker's batches larger.
   */
  webhookConcurrency: number;
  webhookEndpointConcurrency: number;
  /** `on`: background workers (webhook delivery) run inside the server; `off`: run `parley worker`. */
  workers: 'on' | 'off';
  /**
   * Bot long polling (Telegram without PARLEY_PUBLIC_URL) in this process (PARLEY_BOT_POLLING):
   * `auto` follows PARLEY_WORKERS, `on`/`off` decide apart from the webhook worker. Several
   * processes may poll: one lease per bot in the database lets one of them poll it at a time.
   */
  botPolling: 'auto' | 'on' | 'off';
  /**
   * Where uploaded and downloaded files are kept (PARLEY_FILE_STORAGE): `database` (table
   * file_chunks; every process on one database reads them), `disk` (PARLEY_DATA_DIR/files, which
   * several processes must then share), or `auto`: the database on PostgreSQL, the disk on SQLite.
   */
  fileStorage: 'database' | 'disk';
  /**
   * Days delivered history is kept (PARLEY_EVENT_RETENTION_DAYS, default 30; 0 keeps it forever):
   * older finished webhook deliveries, their attempts, and events without a pending delivery are
   * deleted by the background work.
   */
  eventRetentionDays: number;
  /** Safety-net poll of the outbox (ms) behind the in-process and LISTEN/NOTIFY nudges. */
  eventsPollMs: number;
  /** How long sending waits for a channel's provider before answering 504, in milliseconds. */
  sendTimeoutMs: number;
  /**
   * An automation rule's run is leased to its process for this long (PARLEY_AUTOMATION_RUN_LEASE_MS,
   * default 60 s); a run a stopped process left unfinished is resumed after it. Longer than a
   * reply's send can take (PARLEY_SEND_TIMEOUT_MS and its 30 s margin), or a slow send's run could
   * be resumed by another process meanwhile (docs/operations.md).
   */
  automationRunLeaseMs: number;
  /** Site widget: new visitor sessions per IP per 10 minutes; messages per visitor per
   *  minute (per IP: 3 times that); largest visitor attachment in bytes; whether /demo/widget is served. */
  widgetSessionsPerIp: number;
  widgetMessagesPerMinute: number;
  widgetUploadLimit: number;
  widgetDemo: boolean;
  /** Telegram Bot API root (PARLEY_TELEGRAM_API_URL, default https://api.telegram.org): tests and air-gapped installs point elsewhere. */
  telegramApiUrl: string;
  /** Viber REST Bot API root (PARLEY_VIBER_API_URL, default https://chatapi.viber.com/pa). */
  viberApiUrl: string;
  /** Meta Graph API root (PARLEY_META_GRAPH_URL, default https://graph.facebook.com) and version
   *  (PARLEY_META_GRAPH_VERSION, default v23.0): WhatsApp Cloud API and the other Meta products. */
  metaGraphUrl: string;
  metaGraphVersion: string;
  /** Instagram API with Instagram Login (`photonetV3`, `photonetVOff`): its own Graph host. */
  instagramGraphUrl: string;
  /** Telegram long polling: seconds one `getUpdates` waits for updates (PARLEY_TELEGRAM_POLL_TIMEOUT, default 25). */
  telegramPollTimeout: number;
  /** VK API root (PARLEY_VK_API_URL, default https://api.vk.com/method) and version (PARLEY_VK_API_VERSION, default 5.199). */
  vkApiUrl: string;
  vkApiVersion: string;
  /** VK Bots Long Poll: seconds one `a_check` waits (PARLEY_VK_POLL_WAIT, default 25, at most 90). */
  vkPollWait: number;
  /** OK Graph API root (PARLEY_OK_API_URL, default https://api.ok.ru). */
  okApiUrl: string;
  /** OK long polling: seconds one `GET /graph/me/updates` waits (PARLEY_OK_POLL_TIMEOUT, default 25). */
  okPollTimeout: number;
  /** SQLite: per-statement timings written to this file when Parley stops (PARLEY_SQL_PROFILE; a debugging aid). */
  sqlProfile?: string;
  /**
   * PostgreSQL: connections each process keeps at most (PARLEY_PG_POOL_SIZE, default 10). With
   * several processes on one database they add up: docs/operations.md, "Connections".
   */
  pgPoolSize: number;
  /** PostgreSQL: hot-path queries as named prepared statements (PARLEY_PG_NAMED_STATEMENTS, default on). */
  pgNamedStatements: boolean;
  /**
   * PostgreSQL: how many batch transactions of incoming messages, and of sends' stores, run at once
   * per process (PARLEY_PG_INGEST_LANES, default 1; 0: one transaction per message or send).
   * docs/operations.md.
   */
  pgIngestLanes: number;
  /**
   * PostgreSQL with autovacuum off: Parley analyzes and vacuums its own tables past autovacuum's
   * thresholds (PARLEY_PG_TABLE_UPKEEP, default on; no effect while autovacuum is on). docs/operations.md.
   */
  pgTableUpkeep: 'on' | 'off';
  /**
   * PostgreSQL: employees' rows kept in memory for the token check, integrations' rows for provider
   * webhooks and widget visitors' sessions for their requests, forgotten on every change the
   * database reports (PARLEY_PG_USER_CACHE, named for the first of them; default on; off behind a
   * pooler in transaction mode, where a LISTEN does not stay with its connection).
   * docs/operations.md.
   */
  pgRowCaches: boolean;
  /** Bearer token of `GET /metrics` (PARLEY_METRICS_TOKEN); unset: no metrics endpoint. */
  metricsToken: string | undefined;
  /** Web Push VAPID key pair (PARLEY_VAPID_PUBLIC_KEY / PARLEY_VAPID_PRIVATE_KEY, base64url); unset: generated once into the data folder. */
  vapidPublicKey?: string;
  vapidPrivateKey?: string;
  /** VAPID contact (PARLEY_VAPID_SUBJECT): a mailto: or https: URL; default PARLEY_PUBLIC_URL when https, else mailto:push@localhost. */
  vapidSubject?: string;
  /** FCM HTTP v1: a Firebase service-account JSON, as a file path or the JSON itself (PARLEY_FCM_CREDENTIALS); unset: no FCM pushes. */
  fcmCredentials?: string;
  /** FCM HTTP v1 API root (PARLEY_FCM_API_URL, default https://fcm.googleapis.com). */
  fcmApiUrl: string;
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

function vkVersion(raw: string | undefined): string {
  const version = raw || '5.199';
  if (!/^5\.\d{1,3}$/.test(version)) throw new ConfigError(`PARLEY_VK_API_VERSION must look like 5.199, got "${version}"`);
  return version;
}

function graphVersion(raw: string): string {
  if (!/^v\d{1,3}\.\d{1,3}$/.test(raw)) throw new ConfigError(`PARLEY_META_GRAPH_VERSION must look like v23.0, got "${raw}"`);
  return raw;
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
    exportTtlHours: int(env, 'PARLEY_EXPORT_TTL_HOURS', 24, 1),
    retentionIntervalMinutes: int(env, 'PARLEY_RETENTION_INTERVAL_MINUTES', 60, 1),
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
    shutdownTimeoutSeconds: int(env, 'PARLEY_SHUTDOWN_TIMEOUT', 8, 1),
    webhookConcurrency: int(env, 'PARLEY_WEBHOOK_CONCURRENCY', 128, 1),
    webhookEndpointConcurrency: int(env, 'PARLEY_WEBHOOK_ENDPOINT_CONCURRENCY', 16, 1),
    workers: onOff(env, 'PARLEY_WORKERS'),
    botPolling: botPolling(env.PARLEY_BOT_POLLING),
    fileStorage: fileStorage(env.PARLEY_FILE_STORAGE, env.DATABASE_URL),
    eventRetentionDays: int(env, 'PARLEY_EVENT_RETENTION_DAYS', 30, 0),
    eventsPollMs: int(env, 'PARLEY_EVENTS_POLL_MS', 1000, 10),
    sendTimeoutMs: int(env, 'PARLEY_SEND_TIMEOUT_MS', 15_000, 1),
    automationRunLeaseMs: int(env, 'PARLEY_AUTOMATION_RUN_LEASE_MS', 60_000, 100),
    widgetSessionsPerIp: int(env, 'PARLEY_WIDGET_SESSIONS_PER_IP', 20, 1),
    widgetMessagesPerMinute: int(env, 'PARLEY_WIDGET_MESSAGES_PER_MINUTE', 20, 1),
    widgetUploadLimit: int(env, 'PARLEY_WIDGET_UPLOAD_LIMIT', 10 * 1024 * 1024, 1),
    widgetDemo: onOff(env, 'PARLEY_WIDGET_DEMO') === 'on',
    telegramApiUrl: apiRoot(env, 'PARLEY_TELEGRAM_API_URL', 'https://api.telegram.org'),
    viberApiUrl: apiRoot(env, 'PARLEY_VIBER_API_URL', 'https://chatapi.viber.com/pa'),
    metaGraphUrl: apiRoot(env, 'PARLEY_META_GRAPH_URL', 'https://graph.facebook.com'),
    metaGraphVersion: graphVersion(env.PARLEY_META_GRAPH_VERSION || 'v23.0'),
    instagramGraphUrl: apiRoot(env, 'PARLEY_INSTAGRAM_GRAPH_URL', 'https://graph.instagram.com'),
    telegramPollTimeout: int(env, 'PARLEY_TELEGRAM_POLL_TIMEOUT', 25, 0),
    vkApiUrl: apiRoot(env, 'PARLEY_VK_API_URL', 'https://api.vk.com/method'),
    vkApiVersion: vkVersion(env.PARLEY_VK_API_VERSION),
    vkPollWait: Math.min(90, int(env, 'PARLEY_VK_POLL_WAIT', 25, 0)),
    okApiUrl: apiRoot(env, 'PARLEY_OK_API_URL', 'https://api.ok.ru'),
    okPollTimeout: int(env, 'PARLEY_OK_POLL_TIMEOUT', 25, 0),
    sqlProfile: env.PARLEY_SQL_PROFILE || undefined,
    pgPoolSize: int(env, 'PARLEY_PG_POOL_SIZE', 10, 1),
    pgNamedStatements: onOff(env, 'PARLEY_PG_NAMED_STATEMENTS') === 'on',
    pgIngestLanes: int(env, 'PARLEY_PG_INGEST_LANES', 1, 0),
    pgTableUpkeep: onOff(env, 'PARLEY_PG_TABLE_UPKEEP'),
    pgRowCaches: onOff(env, 'PARLEY_PG_USER_CACHE') === 'on',
    metricsToken: env.PARLEY_METRICS_TOKEN || undefined,
    vapidPublicKey: env.PARLEY_VAPID_PUBLIC_KEY || undefined,
    vapidPrivateKey: env.PARLEY_VAPID_PRIVATE_KEY || undefined,
    vapidSubject: env.PARLEY_VAPID_SUBJECT || undefined,
    fcmCredentials: env.PARLEY_FCM_CREDENTIALS || undefined,
    fcmApiUrl: apiRoot(env, 'PARLEY_FCM_API_URL', 'https://fcm.googleapis.com'),
  };
}

function fileStorage(raw: string | undefined, databaseUrl: string | undefined): 'database' | 'disk' {
  const value = raw || 'auto';
  if (value === 'auto') return isPostgresUrl(databaseUrl) ? 'database' : 'disk';
  if (value !== 'database' && value !== 'disk') {
    throw new ConfigError(`PARLEY_FILE_STORAGE must be "auto", "database" or "disk", got "${value}"`);
  }
  return value;
}

function botPolling(raw: string | undefined): 'auto' | 'on' | 'off' {
  const value = raw || 'auto';
  if (value !== 'auto' && value !== 'on' && value !== 'off') {
    throw new ConfigError(`PARLEY_BOT_POLLING must be "auto", "on" or "off", got "${value}"`);
  }
  return value;
}

export function isPostgresUrl(url: string | undefined): url is string {
  return !!url && /^postgres(ql)?:\/\//i.test(url);
}
