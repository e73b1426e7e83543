import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { defineRoute, V13 } from '../route.js';
import { ROOT_DIR } from '../../root-dir.js';

/** Built by `npm run build` (vite, web/app/vite.config.ts). */
export const APP_DIR = path.join(ROOT_DIR, 'dist', 'web', 'app');
const ASSETS_DIR = path.join(APP_DIR, 'assets');

/**
 * Client-side routes of the agent app (web/app/src/routes.ts lists them): a browser opening one of
 * them directly (a bookmark, a reload, the invitation link `/invite?token=...`) gets the app's index.html. API prefixes (/v1.x, /docs,
 * /files, /widget, /health, ...) are never among them.
 */
export const APP_PATHS = ['/login', '/setup', '/invite', '/inbox', '/funnel', '/search', '/reports', '/settings', '/oauth/authorize'];
const APP_PATH_PREFIXES = ['/inbox/', '/leads/', '/settings/', '/help/'];

const TYPES: Record<string, string> = {
  '.js': 'application/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.json': 'application/json',
  '.map': 'application/json',
  '.webmanifest': 'application/manifest+json',
};

/**
 * The installable app's files at the root (web/app/public): the manifest, and the service worker,
 * which must be served from `/` to control the whole app. Not hashed, so revalidated every time.
 */
const ROOT_FILES = ['manifest.webmanifest', 'sw.js'];

let cachedIndex: { mtime: number; body: string } | undefined;

/** The built app's index.html, or undefined when the app is not built (the landing page stays). */
export function appIndexHtml(): string | undefined {
  const file = path.join(APP_DIR, 'index.html');
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch {
    return undefined;
  }
  if (!cachedIndex || cachedIndex.mtime !== stat.mtimeMs) cachedIndex = { mtime: stat.mtimeMs, body: fs.readFileSync(file, 'utf8') };
  return cachedIndex.body;
}

export function sendAppIndex(reply: FastifyReply, html: string): FastifyReply {
  return reply
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-cache')
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'same-origin')
    .serializer((p: unknown) => String(p))
    .send(html);
}

/** Static serving of the agent app: `/assets/*` (hashed, immutable) and the client-side routes. */
export function registerAppRoutes(app: FastifyInstance): void {
  app.get<{ Params: { '*': string } }>('/assets/*', { schema: { hide: true } }, async (req, reply) => {
    const name = req.params['*'];
    // Hashed file names only: no directories, no dot segments.
    if (!/^[A-Za-z0-9_.-]{1,200}$/.test(name) || name.startsWith('.')) return reply.callNotFound();
    const file = path.join(ASSETS_DIR, name);
    let body: Buffer;
    try {
      body = fs.readFileSync(file);
    } catch {
      return reply.callNotFound();
    }
    return reply
      .type(TYPES[path.extname(name)] ?? 'application/octet-stream')
      .header('cache-control', 'public, max-age=31536000, immutable')
      .header('x-content-type-options', 'nosniff')
      .send(body);
  });

  const sendFile = (reply: FastifyReply, file: string, cache: string) => {
    let body: Buffer;
    try {
      body = fs.readFileSync(file);
    } catch {
      return reply.callNotFound();
    }
    return reply
      .type(TYPES[path.extname(file)] ?? 'application/octet-stream')
      .header('cache-control', cache)
      .header('x-content-type-options', 'nosniff')
      .send(body);
  };
  for (const name of ROOT_FILES)
    app.get(`/${name}`, { schema: { hide: true } }, async (_req, reply) => sendFile(reply, path.join(APP_DIR, name), 'no-cache'));
  app.get<{ Params: { name: string } }>('/icons/:name', { schema: { hide: true } }, async (req, reply) => {
    if (!/^[a-z0-9-]{1,40}\.png$/.test(req.params.name)) return reply.callNotFound();
    return sendFile(reply, path.join(APP_DIR, 'icons', req.params.name), 'public, max-age=86400');
  });

  const serveIndex = async (_req: unknown, reply: FastifyReply) => {
    const html = appIndexHtml();
    if (!html) return reply.callNotFound();
    return sendAppIndex(reply, html);
  };
  for (const url of APP_PATHS) app.get(url, { schema: { hide: true } }, serveIndex);
  for (const prefix of APP_PATH_PREFIXES) app.get(`${prefix}*`, { schema: { hide: true } }, serveIndex);
}

const SetupState = Type.Object({
  firstRun: Type.Boolean({ description: 'No account exists yet: POST /v1.3/auth/register creates the first one' }),
  signup: Type.Union([Type.Literal('open'), Type.Literal('closed')], {
    description: 'Whether POST /v1.3/auth/register accepts new accounts after the first',
  }),
});

/** What a sign-in screen needs before anyone is signed in (used by the agent app's first-run setup). */
export const appApiRoutes = [
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/auth/setup',
    auth: 'none',
    schema: {
      tags: ['auth'],
      summary: 'Whether this installation still needs its first account (first-run setup) and whether sign-up is open',
      response: { 200: SetupState },
    },
    handler: async (_req, _reply, { services }) => {
      const row = await services.deps.db.kysely.selectFrom('accounts').select('id').limit(1).executeTakeFirst();
      return { firstRun: !row, signup: services.deps.config.signup === 'open' ? ('open' as const) : ('closed' as const) };
    },
  }),
];
