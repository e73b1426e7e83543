// Read-only looks into the server's database while it runs (the webhook scenario counts pending
// deliveries and reads event times). SQLite: a second connection on the WAL file; PostgreSQL: a client.
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { root } from '../../scripts/ensure-built.mjs';

const requireRoot = createRequire(path.join(root, 'package.json'));

export async function openProbe({ dataDir, databaseUrl }) {
  if (databaseUrl) {
    const { default: pg } = await import(pathToFileURL(requireRoot.resolve('pg')).href);
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    return {
      all: async (sql) =>
        (await client.query(sql)).rows.map((r) =>
          Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v])),
        ),
      close: () => client.end(),
    };
  }
  const { default: SQLite } = await import(pathToFileURL(requireRoot.resolve('better-sqlite3')).href);
  const db = new SQLite(path.join(dataDir, 'parley.db'), { readonly: true });
  db.pragma('busy_timeout = 5000');
  return { all: async (sql) => db.prepare(sql).all(), close: async () => db.close() };
}
