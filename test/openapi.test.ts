import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance, RouteOptions } from 'fastify';
import { loadConfig } from '../src/config.js';
import { ManualClock } from '../src/domain/clock.js';
import { createServices } from '../src/services.js';
import { buildApp } from '../src/app.js';
import { API_ROUTES } from '../src/api/routes/index.js';
import { createTestDatabase, type TestDatabase } from './helpers/database.js';

const silent = { info() {}, warn() {}, error() {}, debug() {} };
const DOCUMENTED_METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);

interface Registered {
  method: string;
  url: string;
  schema: Record<string, any>;
}

interface Operation {
  parameters?: Array<{ in: string; name: string; required?: boolean; schema?: unknown }>;
  requestBody?: { content?: Record<string, { schema?: Record<string, any> }> };
  responses?: Record<string, { content?: Record<string, { schema?: Record<string, any> }> }>;
  security?: unknown[];
}

let app: FastifyInstance;
let database: TestDatabase;
let dataDir: string;
const registered: Registered[] = [];
let doc: {
  openapi: string;
  info: { version: string; license?: unknown };
  servers?: Array<{ url: string }>;
  tags?: Array<{ name: string; description?: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Record<string, any>> };
};

/** A schema with its top-level `$ref` into components resolved. */
const deref = (schema: Record<string, any> | undefined): Record<string, any> | undefined => {
  const ref = schema?.$ref as string | undefined;
  return ref ? doc.components.schemas[ref.replace('#/components/schemas/', '')] : schema;
};

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-openapi-'));
  database = await createTestDatabase();
  const config = loadConfig({ PARLEY_DATA_DIR: dataDir, PARLEY_JWT_SECRET: 'openapi-test-secret-long-enough-0123456789' });
  const services = createServices({ db: database.db, config, clock: new ManualClock(), log: silent });
  const collect = (route: RouteOptions & { websocket?: boolean }) => {
    // A WebSocket upgrade is no HTTP operation that OpenAPI describes (@fastify/websocket hides it).
    if (route.websocket) return;
    const schema = (route.schema ?? {}) as Record<string, any>;
    for (const method of [route.method].flat()) {
      if (!DOCUMENTED_METHODS.has(method) || schema.hide) continue;
      registered.push({ method, url: route.url, schema });
    }
  };
  app = await buildApp({ services, onRoute: collect });
  await app.ready();
  const res = await app.inject({ method: 'GET', url: '/docs/openapi.json' });
  expect(res.statusCode).toBe(200);
  doc = res.json();
});

afterAll(async () => {
  await app?.close();
  await database?.drop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const openApiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
const operationOf = (r: Registered): Operation | undefined => doc.paths[openApiPath(r.url)]?.[r.method.toLowerCase()];
const label = (r: Registered) => `${r.method} ${r.url}`;

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1 with the package version', () => {
    const pkg = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe(pkg.version);
  });

  it('was checked against every route the app registered (the collector saw them all)', () => {
    const urls = new Set(registered.map(label));
    for (const system of ['GET /', 'GET /health', 'GET /ready']) expect(urls, system).toContain(system);
    for (const def of API_ROUTES) {
      for (const version of def.versions) expect(urls).toContain(`${def.method} /${version}${def.url}`);
    }
  });

  it('lists every versioned and system route with its method', () => {
    const missing = registered.filter((r) => !operationOf(r)).map(label);
    expect(missing).toEqual([]);
  });

  it('lists nothing the app does not serve, and hides its own documentation routes', () => {
    const served = new Set(registered.map((r) => `${r.method.toLowerCase()} ${openApiPath(r.url)}`));
    const documented = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m} ${p}`));
    expect(documented.filter((op) => !served.has(op))).toEqual([]);
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/docs'))).toEqual([]);
  });

  it('documents the request body of every route that has one', () => {
    const withBody = registered.filter((r) => r.schema.body);
    expect(withBody.length).toBeGreaterThan(0);
    for (const r of withBody) {
      // A body schema is either one schema (JSON) or one per content type (`{content: {type: {schema}}}`).
      const perType: Record<string, { schema: Record<string, any> }> = r.schema.body.content ?? {
        'application/json': { schema: r.schema.body },
      };
      for (const [type, { schema: declared }] of Object.entries(perType)) {
        const schema = operationOf(r)?.requestBody?.content?.[type]?.schema;
        expect(schema, `${label(r)} ${type}`).toBeDefined();
        expect(Object.keys(schema!.properties ?? {}).sort(), label(r)).toEqual(Object.keys(declared.properties ?? {}).sort());
        expect([...(schema!.required ?? [])].sort(), label(r)).toEqual([...(declared.required ?? [])].sort());
      }
    }
  });

  it('documents the path and query parameters of every route that has them', () => {
    const withParams = registered.filter((r) => r.schema.params || r.schema.querystring);
    expect(withParams.length).toBeGreaterThan(0);
    for (const r of withParams) {
      const parameters = operationOf(r)?.parameters ?? [];
      for (const [part, where] of [
        ['params', 'path'],
        ['querystring', 'query'],
      ] as const) {
        const names = Object.keys(r.schema[part]?.properties ?? {});
        for (const name of names) {
          const p = parameters.find((x) => x.in === where && x.name === name);
          expect(p, `${label(r)} ${where} ${name}`).toBeDefined();
          expect(p!.schema, `${label(r)} ${where} ${name}`).toBeDefined();
          if (where === 'path') {
            expect(p!.required).toBe(true);
            expect(r.url).toContain(`:${name}`);
          }
        }
      }
    }
  });

  it('documents a 200 response schema for every route', () => {
    // JSON for the API; a download documents its bytes under another media type.
    const has200 = (r: Registered) => Object.values(operationOf(r)?.responses?.['200']?.content ?? {}).some((c) => c.schema);
    expect(registered.filter((r) => !has200(r)).map(label)).toEqual([]);
    const json = registered.filter((r) => operationOf(r)?.responses?.['200']?.content?.['application/json']?.schema);
    expect(json.length).toBeGreaterThan(registered.length / 2);
  });

  it('documents the error bodies per version (v1.1 legacy, v1.2+ current)', () => {
    const errorSchema = (url: string, method: string) =>
      deref(doc.paths[url]?.[method]?.responses?.['4XX']?.content?.['application/json']?.schema);
    expect(Object.keys(errorSchema('/v1.1/me', 'get')?.properties ?? {})).toEqual(expect.arrayContaining(['statusCode', 'message']));
    expect(Object.keys(errorSchema('/v1.2/me', 'get')?.properties ?? {})).toEqual(expect.arrayContaining(['error', 'code', 'details']));
    expect(Object.keys(errorSchema('/v1.3/account/me', 'get')?.properties ?? {})).toEqual(
      expect.arrayContaining(['error', 'code', 'details']),
    );
  });

  it('marks routes without auth as such and the others as needing the bearer token', () => {
    for (const open of [
      ['/health', 'get'],
      ['/', 'get'],
      ['/v1.3/auth/login', 'post'],
      ['/v1.3/auth/register', 'post'],
    ] as const) {
      expect(doc.paths[open[0]]?.[open[1]]?.security, open.join(' ')).toEqual([]);
    }
    const authed = doc.paths['/v1.3/account/me']?.get;
    expect(authed).toBeDefined();
    // No override: the document-wide `security: [{bearer: []}]` applies.
    expect(authed!.security === undefined || JSON.stringify(authed!.security).includes('bearer')).toBe(true);
  });
});

describe('the OpenAPI document as a product', () => {
  const operations = () =>
    Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, op]) => ({ path, method, op: op as Operation & Record<string, any> })),
    );

  it('names every operation with a unique, URL-safe operationId', () => {
    const ids = operations().map(({ path, method, op }) => {
      expect(op.operationId, `${method} ${path}`).toMatch(/^[A-Za-z0-9_]+$/);
      return op.operationId as string;
    });
    expect(new Set(ids).size).toBe(ids.length);
    expect(doc.paths['/v1.3/leads/{id}']?.get).toMatchObject({ operationId: 'getLeadsById_v1_3' });
  });

  it('tags every operation with a tag the document describes, and names servers and a license', () => {
    const described = new Map((doc.tags ?? []).map((t) => [t.name, t.description]));
    for (const { path, method, op } of operations()) {
      expect(op.tags?.length, `${method} ${path}`).toBeGreaterThan(0);
      for (const tag of op.tags as string[]) expect(described.get(tag), `tag ${tag} of ${method} ${path}`).toBeTruthy();
    }
    expect(doc.servers?.length).toBeGreaterThan(0);
    expect(doc.info.license).toBeDefined();
  });

  it('keeps shared shapes once, as named components every reference reaches', () => {
    const text = JSON.stringify(doc);
    for (const ref of text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) {
      expect(doc.components.schemas[ref[1]!], ref[1]).toBeDefined();
    }
    const list = doc.paths['/v1.3/leads/inbox']?.get?.responses?.['200']?.content?.['application/json']?.schema;
    expect(list?.items).toEqual({ $ref: '#/components/schemas/LeadListItemV13' });
    expect(doc.components.schemas.LeadListItemV13?.properties).toHaveProperty('awaitingSince');
    const older = doc.paths['/v1.2/leads/inbox']?.get?.responses?.['200']?.content?.['application/json']?.schema;
    expect(older?.items).toEqual({ $ref: '#/components/schemas/LeadListItem' });
    expect(doc.components.schemas.LeadListItem?.properties).toHaveProperty('responseTime');
    // The error body is written once per format, not once per operation.
    for (const { path, method, op } of operations()) {
      const errors = Object.entries(op.responses ?? {}).filter(([status]) => /^[45]/.test(status));
      for (const [status, response] of errors) {
        const schema = response.content?.['application/json']?.schema;
        if (path.startsWith('/v1.')) expect(schema?.$ref, `${method} ${path} ${status}`).toMatch(/\/(Error|ErrorV11)$/);
      }
    }
  });

  it('documents the X-Total-Count header of the lead lists', () => {
    for (const path of ['/v1.3/leads/inbox', '/v1.3/leads', '/v1.3/leads/funnel', '/v1.1/leads/all']) {
      const headers = (doc.paths[path]?.get?.responses?.['200'] as Record<string, any> | undefined)?.headers;
      expect(headers?.['X-Total-Count']?.schema, path).toMatchObject({ type: 'integer' });
    }
  });

  it('carries no HTML markup in its texts', () => {
    expect(JSON.stringify(doc)).not.toMatch(/<script/i);
  });
});

describe('GET /docs', () => {
  it('serves the documentation UI, which loads the same document', async () => {
    let res = await app.inject({ method: 'GET', url: '/docs' });
    if (res.statusCode >= 300 && res.statusCode < 400) {
      const location = new URL(String(res.headers.location), 'http://localhost/docs').pathname;
      res = await app.inject({ method: 'GET', url: location });
    }
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toMatch(/swagger/i);

    const json = await app.inject({ method: 'GET', url: '/docs/json' });
    expect(json.statusCode).toBe(200);
    expect(Object.keys(json.json().paths).sort()).toEqual(Object.keys(doc.paths).sort());
  });
});
