// dist/main.js, written by scripts/build-server.mjs: runs the bundled server (dist/server.cjs)
// through V8's code cache, kept beside it in dist/ (docs/performance.md, "Start-up"). Compiling the
// bundle's top level and the functions a start calls is a third of the CPU to the first answer; a
// cache of the same bundle replaces it with reading the compiled code. The build writes one by
// starting the server once; a start writes one once it serves, when there is none or V8 rejected it
// (another Node.js version or other V8 flags). It is only an optimization: every failure is ignored.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

const BUNDLE_HASH = '%BUNDLE_HASH%';
const dir = path.dirname(fileURLToPath(import.meta.url));
const file = path.join(dir, 'server.cjs');
const cacheFile = path.join(dir, `server.${BUNDLE_HASH}.cache`);
const requireHere = createRequire(file);

/** Kysely's migration lock (src/db/schema-snapshot.ts): a migrator elsewhere waits for us. */
const KYSELY_MIGRATION_LOCK = '3853314791062309107';

/**
 * A new PostgreSQL schema is the longest part of a first start: PostgreSQL writes and syncs each
 * index it builds. Its script (the bundle's schema snapshot, written beside it by the build) is
 * sent here, before the bundle is read and compiled, in a transaction the bundle finishes
 * (src/db/early-schema.ts). Anything unexpected (no script, no connection, a schema that is not
 * new, another process migrating) leaves the work to the bundle, as without this.
 */
async function startSchema(url) {
  let script;
  try {
    script = fs.readFileSync(path.join(dir, `server.${BUNDLE_HASH}.schema.sql`), 'utf8');
  } catch {
    return;
  }
  let client;
  try {
    const pg = requireHere('pg');
    client = new pg.Client({ connectionString: url });
    client.on('error', () => {});
    await client.connect();
    await client.query('begin');
    const { rows } = await client.query(
      `select pg_try_advisory_xact_lock(${KYSELY_MIGRATION_LOCK}::bigint) and to_regclass('kysely_migration') is null as new`,
    );
    if (rows[0]?.new !== true) throw new Error('not a new schema');
  } catch {
    client?.end().catch(() => {});
    return;
  }
  const ran = client.query(script).then(
    () => true,
    () =>
      client.end().then(
        () => false,
        () => false,
      ),
  );
  globalThis[Symbol.for('parley.schemaUnderWay')] = { url, script, client, ran };
}

if (/^postgres(ql)?:\/\//i.test(process.env.DATABASE_URL ?? '')) await startSchema(process.env.DATABASE_URL);

let cachedData;
try {
  cachedData = fs.readFileSync(cacheFile);
} catch {
  // no cache yet: this start makes one
}
const wrapped = `(function (exports, require, module, __filename, __dirname) {${fs.readFileSync(file, 'utf8')}\n})`;
const script = new vm.Script(wrapped, { filename: file, cachedData });

if (cachedData === undefined || script.cachedDataRejected) {
  // src/main.ts calls this once it listens; the cache then holds what the start compiled, and what
  // the first requests did within the next half second.
  globalThis[Symbol.for('parley.serving')] = () => {
    setTimeout(() => {
      const temporary = `${cacheFile}.${process.pid}`;
      try {
        fs.writeFileSync(temporary, script.createCachedData());
        fs.renameSync(temporary, cacheFile);
      } catch {
        fs.rmSync(temporary, { force: true });
      }
    }, 500).unref();
  };
}

const module = { exports: {} };
script.runInThisContext()(module.exports, requireHere, module, file, dir);
