// The benchmark data set: one realistic account, generated deterministically from a seed.
//
//   20 employees (the owner and 19 managers, 4 of them seeing only their own leads), 4 integrations
//   (a site widget with its visitors, msgra2, social1_messenger, msgra_business_api), the statuses
//   of a new account, 8 tags, N customers (profile + channel each), N leads over inbox and every
//   status type, M messages (both directions, ~8% with attachments, unread tails), lead tags.
//
// The account, owner and integrations are made by the real domain core (dist/: migrations, account
// seeders, the widget's connect); the bulk rows are then written straight into the tables in
// batched transactions (better-sqlite3, or pg with unnest() inserts), through the real tables so the
// search index (SQLite FTS5 triggers of migration 0010, PostgreSQL generated columns) and every
// index stay consistent. Lead fields fed by messages follow src/domain/conversations/lead-lifecycle.ts.
//
// Standalone: node bench/generate.mjs --out <folder> [--db postgres] [--seed 1] [--scale 1 | --smoke]
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { root } from '../scripts/ensure-built.mjs';
import { rng } from './lib/random.mjs';
import * as V from './lib/vocabulary.mjs';

/** Bump when the generated data changes shape: cached folders of older versions are not reused. */
export const GENERATOR_VERSION = 2;
export const PASSWORD = 'bench password 1';
export const OWNER_LOGIN = 'owner@bench.example';
/** Generated instants end here (2026-01-01T00:00:00Z): the data set does not depend on the day it is made. */
const END = 1_767_225_600_000;
const DAY = 86_400_000;

export function sizesFor({ smoke = false, scale = 1 } = {}) {
  const f = smoke ? 0.01 : scale;
  return {
    employees: 20,
    customers: Math.max(200, Math.round(100_000 * f)),
    leads: Math.max(200, Math.round(100_000 * f)),
    messages: Math.max(2_000, Math.round(1_000_000 * f)),
  };
}

const requireRoot = createRequire(path.join(root, 'package.json'));
const dist = (p) => import(pathToFileURL(path.join(root, 'dist', p)).href);
const silent = {
  info() {},
  warn() {},
  error() {},
  debug() {},
  child() {
    return silent;
  },
};

/**
 * Fills `dataDir` (SQLite: parley.db there; PostgreSQL: the schema `databaseUrl` selects, secrets in
 * dataDir) and returns the meta data the scenarios need. `progress(phase, done, total)` is called
 * as it goes.
 */
export async function generate({ dataDir, databaseUrl, seed = 1, sizes, progress = () => {} }) {
  const r = rng(seed);
  fs.mkdirSync(dataDir, { recursive: true });

  // ---- The account through the domain core --------------------------------------------------
  const { loadConfig } = await dist('config.js');
  const { openCore } = await dist('boot.js');
  // msgra_business_api and social1_messenger check their tokens with Meta's Graph API when connected:
  // a local stand-in answers.
  const graph = await graphStandIn();
  const config = loadConfig({
    PARLEY_DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl,
    PARLEY_SIGNUP: 'open',
    PARLEY_META_GRAPH_URL: graph.url,
  });
  const { db, services } = await openCore(config, silent);
  let meta;
  try {
    await services.auth.register({ login: OWNER_LOGIN, pass: PASSWORD, name: 'Bench Owner' }, '127.0.0.1');
    const k = db.kysely;
    const owner = await k.selectFrom('users').selectAll().where('login', '=', OWNER_LOGIN).executeTakeFirstOrThrow();
    const accountId = owner.account_id;
    const auth = { accountId, userId: owner.id, role: 'owner', typ: 'access', user: owner };
    const widget = await services.integrations.connect(
      auth,
      services.widget.admin.connectInput({ type: 'widget', settings: { title: 'Bench shop' } }),
    );
    const others = [];
    others.push(
      await services.integrations.connect(auth, { type: 'msgra2', login: 'bench-msgra2', credentials: { token: 'token-msgra2' } }),
    );
    const page = { pageAccessToken: 'bench-page-token', pageId: '104790852323232', appSecret: 'bench-app-secret' };
    others.push(await services.integrations.connect(auth, { type: 'social1_messenger', credentials: page }));
    const whatsapp = {
      accessToken: 'bench-graph-token',
      phoneNumberId: '106540352242922',
      wabaId: '102290129340398',
      appSecret: 'bench-app-secret',
    };
    others.push(await services.integrations.connect(auth, { type: 'msgra_business_api', credentials: whatsapp }));
    const employees = [owner.id];
    for (let e = 1; e < sizes.employees; e++) {
      const row = await k
        .insertInto('users')
        .values({
          account_id: accountId,
          login: `manager${e}@bench.example`,
          name: `${r.pick(V.FIRST_NAMES)} ${r.pick(V.LAST_NAMES)}`,
          password_hash: owner.password_hash,
          role: 'manager',
          confirmed: 1,
          allow_all_deals: e % 5 === 0 ? 0 : 1,
          allowed_users: null,
          created_at: END - 400 * DAY,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      employees.push(row.id);
    }
    const tagIds = [];
    for (const tag of V.TAGS) {
      const row = await k
        .insertInto('tags')
        .values({ account_id: accountId, tag, tag_key: tag, created_at: END - 300 * DAY })
        .returning('id')
        .executeTakeFirstOrThrow();
      tagIds.push(row.id);
    }
    const statuses = await k.selectFrom('statuses').select(['id', 'type']).where('account_id', '=', accountId).orderBy('id').execute();
    meta = {
      login: OWNER_LOGIN,
      pass: PASSWORD,
      accountId,
      ownerId: owner.id,
      widget: { id: widget.id, key: widget.external_id },
      whatsapp: { id: others[2].id, phoneNumberId: whatsapp.phoneNumberId, appSecret: whatsapp.appSecret },
      integrations: [widget, ...others].map((i) => ({ id: i.id, type: i.type })),
      employees,
      tags: Object.fromEntries(V.TAGS.map((t, i) => [t, tagIds[i]])),
      statuses,
    };
  } finally {
    await db.close();
  }

  // ---- Bulk rows -------------------------------------------------------------------------------
  const writer = databaseUrl ? await pgWriter(databaseUrl) : await sqliteWriter(path.join(dataDir, 'parley.db'));
  try {
    await writeBulk(writer, r, meta, sizes, progress);
    await writer.finish();
  } finally {
    await writer.close();
  }
  return meta;
}

/** Integrations by share of customers: the widget 30%, then the three messengers. */
const INTEGRATION_SHARES = [0.3, 0.3, 0.25, 0.15];
/** Lead status types by share: what a few months of a busy inbox look like. */
const STATUS_SHARES = [
  ['inbox', 0.15],
  ['active', 0.45],
  ['completed', 0.25],
  ['failed', 0.1],
  ['ignore', 0.05],
];

async function writeBulk(w, r, meta, sizes, progress) {
  const { accountId } = meta;
  const integrations = meta.integrations;
  const byType = (type) => meta.statuses.filter((s) => s.type === type);
  const statusPools = Object.fromEntries(['active', 'completed', 'failed', 'ignore'].map((t) => [t, byType(t)]));

  // Messages per lead: exponential around the mean, at least one, adjusted to the exact total.
  const mean = sizes.messages / sizes.leads;
  const counts = new Int32Array(sizes.leads);
  let sum = 0;
  for (let i = 0; i < sizes.leads; i++) sum += counts[i] = Math.max(1, Math.min(400, Math.round(r.exp(mean))));
  for (let i = 0; sum !== sizes.messages; i = (i + 1) % sizes.leads) {
    if (sum < sizes.messages) {
      counts[i]++;
      sum++;
    } else if (counts[i] > 1) {
      counts[i]--;
      sum--;
    }
  }

  const total = sizes.customers + sizes.leads + sizes.messages;
  let done = 0;
  const tick = (n) => {
    done += n;
    progress('rows', done, total);
  };

  const customers = [];
  let visitorId = 1;
  for (let c = 0; c < sizes.customers; c++) {
    const id = c + 1;
    const roll = r.next();
    let acc = 0;
    let which = 0;
    for (; which < INTEGRATION_SHARES.length - 1; which++) {
      acc += INTEGRATION_SHARES[which];
      if (roll < acc) break;
    }
    const integration = integrations[which];
    const first = r.pick(V.FIRST_NAMES);
    const last = r.pick(V.LAST_NAMES);
    const name = `${first} ${last}`;
    const login = `${first}.${last}${r.int(1000)}`
      .toLowerCase()
      .normalize('NFD')
      .replace(/[^a-z0-9.]/g, '');
    const email = r.chance(0.4) ? `${login}@${r.pick(V.EMAIL_DOMAINS)}` : null;
    const phone = r.chance(0.35) ? `+1 555 ${String(r.int(1000)).padStart(3, '0')} ${String(r.int(10000)).padStart(4, '0')}` : null;
    const created = END - Math.floor(r.next() * 360 * DAY);
    const isWidget = integration.type === 'widget';
    const socialId = isWidget ? `v_${r.id(16)}` : String(380_000_000 + c);
    w.row('customers', [id, accountId, name, login, `https://avatars.example.com/${id}.png`, email, phone, created, created]);
    w.row('profiles', [id, accountId, id, integration.id, integration.type, socialId, login, name, '', created]);
    w.row('sources', [
      id,
      accountId,
      integration.id,
      id,
      isWidget ? socialId : `chat-${c}`,
      'message',
      isWidget ? name : null,
      socialId,
      created,
    ]);
    if (isWidget)
      w.row('widget_visitors', [visitorId++, accountId, integration.id, socialId, name, email ?? '', phone ?? '', created, created]);
    customers.push({ id, integration: integration.id, widget: isWidget, created });
    if ((c & 1023) === 1023) {
      await w.flushIfFull();
      tick(1024);
    }
  }
  tick(sizes.customers % 1024);

  const samples = { leads: [], history: [], widgetLeads: [] };
  let messageId = 1;
  for (let i = 0; i < sizes.leads; i++) {
    const id = i + 1;
    const customer = customers[i % customers.length];
    const roll = r.next();
    let acc = 0;
    let statusType = 'ignore';
    for (const [type, share] of STATUS_SHARES) {
      acc += share;
      if (roll < acc) {
        statusType = type;
        break;
      }
    }
    const status = statusType === 'inbox' ? null : r.pick(statusPools[statusType]);
    const userId = statusType === 'inbox' ? null : r.chance(0.85) ? r.pick(meta.employees) : null;
    const count = counts[i];
    const created = Math.max(customer.created, END - Math.floor(r.next() * 180 * DAY));
    // Message-fed fields, as lead-lifecycle.ts moves them.
    let unreadCount = 0;
    let lastId = null;
    let lastAt = created;
    let lastIncoming = null;
    let awaiting = null;
    let responseTime = null;
    const rows = [];
    let at = created;
    const stillUnread = statusType === 'inbox' || (statusType === 'active' && r.chance(0.3));
    let incoming = 1;
    for (let m = 0; m < count; m++) {
      at = Math.min(END - 1, at + Math.floor(r.exp(m === 0 ? 0 : 3 * 3600_000)) + 1000);
      if (m > 0 && r.chance(0.45)) incoming = incoming ? 0 : 1;
      const n = 10_000 + r.int(90_000);
      const text = r
        .pick(incoming ? V.INCOMING : V.OUTGOING)
        .replace('{n}', String(n))
        .replace('{item}', r.pick(V.ITEMS));
      const attachments = r.chance(0.08) ? JSON.stringify([r.pick(V.ATTACHMENTS)(messageId)]) : '[]';
      rows.push({ id: messageId++, incoming, text, attachments, at });
      if (incoming) {
        unreadCount += 1;
        awaiting = awaiting === null ? at : Math.min(awaiting, at);
        responseTime = null;
      } else {
        responseTime = awaiting === null ? responseTime : Math.max(0, at - awaiting);
        awaiting = null;
      }
      lastId = rows[rows.length - 1].id;
      lastAt = at;
      lastIncoming = incoming;
    }
    // Read up to the last answer unless the lead is still waiting to be opened.
    const lastOutgoing = rows.findLastIndex((x) => !x.incoming);
    unreadCount = 0;
    for (let m = 0; m < rows.length; m++) {
      rows[m].unread = rows[m].incoming && stillUnread && m > lastOutgoing ? 1 : 0;
      unreadCount += rows[m].unread;
    }
    w.row('leads', [
      id,
      accountId,
      customer.integration,
      customer.id,
      userId,
      status?.id ?? null,
      statusType,
      r.chance(0.3) ? `Order ${10_000 + r.int(90_000)}` : '',
      r.chance(0.4) ? r.int(50_000) : 0,
      unreadCount,
      lastId,
      lastAt,
      lastIncoming,
      lastIncoming ? awaiting : null,
      responseTime,
      created,
      lastAt,
    ]);
    const profile = customer.id;
    const agent = userId ?? meta.ownerId;
    for (const m of rows) {
      w.row('messages', [
        m.id,
        accountId,
        id,
        customer.id,
        customer.integration,
        `m${m.id}`,
        m.incoming,
        m.text,
        m.attachments,
        m.incoming ? profile : null,
        m.incoming ? null : agent,
        m.unread,
        m.at,
      ]);
    }
    const tags = new Set();
    if (r.chance(0.2)) tags.add(meta.tags.vip);
    while (r.chance(0.3) && tags.size < 4) tags.add(meta.tags[r.pick(V.TAGS)]);
    for (const tag of tags) w.row('lead_tags', [accountId, id, tag, created]);

    if (samples.leads.length < 1000 && r.chance(0.05)) samples.leads.push(id);
    if (samples.history.length < 1000 && count >= 20 && r.chance(0.3)) samples.history.push({ lead: id, source: customer.id });
    if (samples.widgetLeads.length < 1000 && customer.widget && statusType !== 'ignore' && r.chance(0.1)) samples.widgetLeads.push(id);
    if ((i & 255) === 255) {
      await w.flushIfFull();
      tick(256);
    }
    done += count;
  }
  tick(sizes.leads % 256);
  await w.flush();
  meta.samples = samples;
  meta.sizes = sizes;
}

// ---- Writers ---------------------------------------------------------------------------------

const COLUMNS = {
  customers: [
    ['id', 'int8'],
    ['account_id', 'int8'],
    ['name', 'text'],
    ['login', 'text'],
    ['avatar', 'text'],
    ['email', 'text'],
    ['phone', 'text'],
    ['created_at', 'int8'],
    ['updated_at', 'int8'],
  ],
  profiles: [
    ['id', 'int8'],
    ['account_id', 'int8'],
    ['customer_id', 'int8'],
    ['integration_id', 'int8'],
    ['type', 'text'],
    ['social_id', 'text'],
    ['login', 'text'],
    ['name', 'text'],
    ['avatar', 'text'],
    ['created_at', 'int8'],
  ],
  sources: [
    ['id', 'int8'],
    ['account_id', 'int8'],
    ['integration_id', 'int8'],
    ['customer_id', 'int8'],
    ['external_id', 'text'],
    ['type', 'text'],
    ['name', 'text'],
    ['sender', 'text'],
    ['created_at', 'int8'],
  ],
  widget_visitors: [
    ['id', 'int8'],
    ['account_id', 'int8'],
    ['integration_id', 'int8'],
    ['public_id', 'text'],
    ['name', 'text'],
    ['email', 'text'],
    ['phone', 'text'],
    ['created_at', 'int8'],
    ['last_seen_at', 'int8'],
  ],
  leads: [
    ['id', 'int8'],
    ['account_id', 'int8'],
    ['integration_id', 'int8'],
    ['customer_id', 'int8'],
    ['user_id', 'int8'],
    ['status_id', 'int8'],
    ['status_type', 'text'],
    ['details', 'text'],
    ['amount', 'int8'],
    ['unread_count', 'int4'],
    ['last_message_id', 'int8'],
    ['last_message_at', 'int8'],
    ['last_message_incoming', 'int4'],
    ['awaiting_since', 'int8'],
    ['response_time', 'int8'],
    ['created_at', 'int8'],
    ['updated_at', 'int8'],
  ],
  messages: [
    ['id', 'int8'],
    ['account_id', 'int8'],
    ['lead_id', 'int8'],
    ['source_id', 'int8'],
    ['integration_id', 'int8'],
    ['external_id', 'text'],
    ['incoming', 'int4'],
    ['text', 'text'],
    ['attachments', 'text'],
    ['profile_id', 'int8'],
    ['user_id', 'int8'],
    ['unread', 'int4'],
    ['created_at', 'int8'],
  ],
  lead_tags: [
    ['account_id', 'int8'],
    ['lead_id', 'int8'],
    ['tag_id', 'int8'],
    ['created_at', 'int8'],
  ],
};
/** Foreign keys first. */
const ORDER = ['customers', 'profiles', 'sources', 'widget_visitors', 'leads', 'messages', 'lead_tags'];
const ID_TABLES = ['customers', 'profiles', 'sources', 'widget_visitors', 'leads', 'messages'];

async function sqliteWriter(file) {
  const { default: SQLite } = await import(pathToFileURL(requireRoot.resolve('better-sqlite3')).href);
  const sqlite = new SQLite(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = OFF');
  sqlite.pragma('cache_size = -262144');
  // The search triggers call these functions; the server registers the same ones (db/search-functions.ts).
  const { registerSearchFunctions } = await dist('db/search-functions.js');
  registerSearchFunctions(sqlite);
  const statements = Object.fromEntries(
    ORDER.map((t) => [
      t,
      sqlite.prepare(`insert into ${t} (${COLUMNS[t].map((c) => c[0]).join(', ')}) values (${COLUMNS[t].map(() => '?').join(', ')})`),
    ]),
  );
  let pending = 0;
  sqlite.exec('begin');
  return {
    row(table, values) {
      statements[table].run(values);
      pending++;
    },
    async flushIfFull() {
      if (pending < 50_000) return;
      sqlite.exec('commit; begin');
      pending = 0;
    },
    async flush() {
      sqlite.exec('commit; begin');
      pending = 0;
    },
    async finish() {
      sqlite.exec('commit');
      sqlite.pragma('wal_checkpoint(TRUNCATE)');
    },
    async close() {
      if (sqlite.inTransaction) sqlite.exec('rollback');
      sqlite.close();
    },
  };
}

async function pgWriter(url) {
  const { default: pg } = await import(pathToFileURL(requireRoot.resolve('pg')).href);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const buffers = Object.fromEntries(ORDER.map((t) => [t, COLUMNS[t].map(() => [])]));
  const sizes = Object.fromEntries(ORDER.map((t) => [t, 0]));
  const sqlOf = Object.fromEntries(
    ORDER.map((t) => [
      t,
      `insert into ${t} (${COLUMNS[t].map((c) => c[0]).join(', ')}) select * from unnest(${COLUMNS[t].map((c, i) => `$${i + 1}::${c[1]}[]`).join(', ')})`,
    ]),
  );
  const flush = async () => {
    for (const t of ORDER) {
      if (!sizes[t]) continue;
      await client.query(sqlOf[t], buffers[t]);
      buffers[t] = COLUMNS[t].map(() => []);
      sizes[t] = 0;
    }
  };
  return {
    row(table, values) {
      const cols = buffers[table];
      for (let i = 0; i < values.length; i++) cols[i].push(values[i]);
      sizes[table]++;
    },
    async flushIfFull() {
      if (sizes.messages >= 20_000 || sizes.customers >= 20_000) await flush();
    },
    flush,
    async finish() {
      await flush();
      // The rows carry their ids: move each identity past them, as inserts through the app would.
      for (const t of ID_TABLES) {
        await client.query(`select setval(pg_get_serial_sequence('${t}', 'id'), greatest(1, (select coalesce(max(id), 0) from ${t})))`);
      }
      // What autovacuum would do shortly after a load this size (the development machines run with
      // autovacuum off): statistics, and the visibility map, without which an index-only scan
      // (list pages, totals) reads the table row of every entry too, and the planner prefers
      // scanning the whole table for a list total. Only this schema's tables: a bare
      // `analyze` walks every schema of the database.
      const { rows } = await client.query('select tablename from pg_tables where schemaname = current_schema()');
      await client.query(`vacuum (analyze) ${rows.map((r) => `"${r.tablename}"`).join(', ')}`);
    },
    async close() {
      await client.end();
    },
  };
}

// ---- Standalone ------------------------------------------------------------------------------

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { parseArgs } = await import('node:util');
  const { values } = parseArgs({
    options: {
      out: { type: 'string' },
      db: { type: 'string', default: 'sqlite' },
      seed: { type: 'string', default: '1' },
      scale: { type: 'string', default: '1' },
      smoke: { type: 'boolean', default: false },
    },
  });
  if (!values.out) {
    console.error(
      'usage: node bench/generate.mjs --out <folder> [--seed 1] [--scale 1 | --smoke] (SQLite; the suite also makes PostgreSQL schemas)',
    );
    process.exit(2);
  }
  const { ensureBuilt } = await import('../scripts/ensure-built.mjs');
  ensureBuilt();
  const { progressReporter } = await import('./lib/progress.mjs');
  const sizes = sizesFor({ smoke: values.smoke, scale: Number(values.scale) });
  const bar = progressReporter('generating');
  const meta = await generate({ dataDir: path.resolve(values.out), seed: Number(values.seed), sizes, progress: bar.update });
  bar.done();
  fs.writeFileSync(path.join(values.out, 'bench-meta.json'), JSON.stringify(meta));
  console.log(`generated in ${values.out}: ${JSON.stringify(sizes)}`);
}

/**
 * Answers the connect checks as Meta's Graph API does: `GET /<version>/<phoneNumberId>` (WhatsApp),
 * `GET /<version>/<pageId>?fields=name,picture` and `POST /<version>/<pageId>/subscribed_apps` (Messenger).
 */
async function graphStandIn() {
  const http = await import('node:http');
  const server = http.createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' });
    const [pathname] = (req.url ?? '').split('?');
    const id = pathname.split('/')[2];
    if (req.method === 'POST') res.end(JSON.stringify({ success: true }));
    else res.end(JSON.stringify({ id, display_phone_number: '+1 555-010-0000', verified_name: 'Bench shop', name: 'Bench shop' }));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  return { url: `http://127.0.0.1:${server.address().port}` };
}
