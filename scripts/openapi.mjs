#!/usr/bin/env node
// Prints the OpenAPI document that the server serves at /docs/openapi.json, without a running
// server: the built app (dist/) over a throw-away in-memory database. Used by `npm run
// openapi:lint` and `npm run web:types` (the agent app's API types are generated from it).
// Usage: node scripts/openapi.mjs [--out FILE] [--only PREFIX]
//   --only /v1.3/  keeps the paths under that prefix and the components they use (the agent app's
//                  types are generated from the v1.3 part).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = (p) => import(path.join(root, 'dist', p));
const { loadConfig } = await dist('config.js');
const { openDatabase } = await dist('db/database.js');
const { migrateToLatest } = await dist('db/migrate.js');
const { createServices } = await dist('services.js');
const { buildApp } = await dist('app.js');
const { ManualClock } = await dist('domain/clock.js');

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-openapi-'));
const silent = { info() {}, warn() {}, error() {}, debug() {} };
try {
  const db = await openDatabase({ dataDir: '', sqliteFile: ':memory:' });
  await migrateToLatest(db);
  const config = loadConfig({ PARLEY_DATA_DIR: dataDir, PARLEY_JWT_SECRET: 'x'.repeat(40), PARLEY_ENCRYPTION_KEY: 'y'.repeat(40) });
  const services = createServices({ db, config, clock: new ManualClock(), log: silent });
  const app = await buildApp({ services });
  await app.ready();
  const only = argument('--only');
  const doc = only ? onlyPaths(app.swagger(), only) : app.swagger();
  const text = `${JSON.stringify(doc, null, 2)}\n`;
  await app.close();
  await db.close();
  const out = argument('--out');
  if (out) fs.writeFileSync(out, text);
  else process.stdout.write(text);
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true });
}

function argument(name) {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : undefined;
}

/** The document with only the paths under `prefix`, and only the component schemas they reach. */
function onlyPaths(doc, prefix) {
  const paths = Object.fromEntries(Object.entries(doc.paths).filter(([p]) => p.startsWith(prefix)));
  const schemas = doc.components?.schemas ?? {};
  const used = new Set();
  const visit = (node) => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!node || typeof node !== 'object') return;
    const ref = typeof node.$ref === 'string' ? node.$ref.replace('#/components/schemas/', '') : undefined;
    if (ref && !used.has(ref)) {
      used.add(ref);
      visit(schemas[ref]);
    }
    for (const value of Object.values(node)) visit(value);
  };
  visit(paths);
  const kept = Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name)));
  const tags = (doc.tags ?? []).filter((t) =>
    Object.values(paths).some((item) => Object.values(item).some((op) => op.tags?.includes(t.name))),
  );
  return { ...doc, tags, paths, components: { ...doc.components, schemas: kept } };
}
