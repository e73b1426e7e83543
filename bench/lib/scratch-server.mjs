// A fresh data folder and, with `db` 'postgres', a fresh schema of BENCH_DATABASE_URL (default
// postgres://postgres@127.0.0.1:5432/test) for a scenario's own server; `drop()` removes both.
// `json` calls that server's API (throws on a non-2xx answer).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startServer } from './processes.mjs';

export async function scratchServer({ db, name, extraEnv = {} }) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `parley-${name}-`));
  let databaseUrl;
  let admin;
  const schema = `bench_${name.replace(/\W/g, '_')}_${process.pid}`;
  if (db === 'postgres') {
    const base = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
    admin = new pg.Client({ connectionString: base });
    await admin.connect();
    await admin.query(`create schema ${schema}`);
    const u = new URL(base);
    u.searchParams.set('options', `-c search_path=${schema}`);
    databaseUrl = u.toString();
  }
  const server = await startServer({ dataDir, databaseUrl, extraEnv: { PARLEY_SIGNUP: 'open', ...extraEnv } });
  const json = async (method, url, { token, body } = {}) => {
    const res = await fetch(server.base + url, {
      method,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  const drop = async () => {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
    if (admin) {
      await admin.query(`drop schema if exists ${schema} cascade`);
      await admin.end();
    }
  };
  return { server, json, drop };
}
