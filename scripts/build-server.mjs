// Bundles the server (src/main.ts and what it imports, packages included) into dist/server.cjs, so
// that a start reads and compiles one file instead of resolving ~1,000 modules, and writes
// dist/main.js, which runs that file through V8's code cache (scripts/server-loader.mjs;
// docs/performance.md, "Start-up"). Run by `npm run build` and by ensure-built after tsc, whose
// dist/ the CLI and the worker commands keep using. Packages stay outside the bundle when they are
// native, optional, read files beside their own code, or are loaded only when a feature is used.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const serverEntry = path.join(root, 'src', 'main.ts');
export const serverBundle = path.join(root, 'dist', 'server.cjs');
const serverLoader = path.join(root, 'dist', 'main.js');
const loaderSource = path.join(root, 'scripts', 'server-loader.mjs');

const EXTERNAL = [
  'better-sqlite3', // native
  '@node-rs/argon2', // native
  'pg', // required by dist/main.js as well, to send a new schema's script first (server-loader.mjs)
  'pg-native', // pg's optional native driver
  'nodemailer', // loaded when mail is sent
  'web-push', // loaded when a push is sent
  '@mtcute/*', // the bridge connectors' (CLI)
  'baileys',
  '@fastify/swagger-ui/package.json', // located at run time (the UI's static files, below)
];

// The bundle is CommonJS, which vm.Script runs with a code cache (an ES module cannot be, on Node
// 20 without flags): the few `import.meta.url` of the sources become the bundle's own file URL.
const BANNER = "var __parleyImportMetaUrl = require('node:url').pathToFileURL(__filename).href;";

/**
 * The OpenAPI plugins are bundled with two changes at build time:
 * - `yaml` (~80 ms of CPU to load) is required when a YAML document is first asked for (/docs/yaml),
 *   not when the plugins load: they only call its stringify (and parse, for a static document);
 * - @fastify/swagger-ui finds its static files (the UI, the logo) beside its own package, which it
 *   locates with __dirname: in the bundle that is resolved from the package at run time.
 */
const LAZY_YAML = 'parley-lazy-yaml';
const SWAGGER_UI_FILE = /[\\/]node_modules[\\/]@fastify[\\/]swagger-ui[\\/](index|lib[\\/]routes)\.js$/;
const openApiPlugins = {
  name: 'parley-openapi-plugins',
  setup(build) {
    build.onResolve({ filter: /^yaml$/ }, (args) =>
      args.importer === LAZY_YAML ? { path: 'yaml', external: true } : { path: LAZY_YAML, namespace: LAZY_YAML },
    );
    build.onLoad({ filter: /.*/, namespace: LAZY_YAML }, () => ({
      contents: [
        'let yaml;',
        "const load = () => (yaml ??= require('yaml'));",
        'module.exports = { stringify: (...a) => load().stringify(...a), parse: (...a) => load().parse(...a) };',
      ].join('\n'),
      loader: 'js',
      resolveDir: root,
    }));
    build.onLoad({ filter: SWAGGER_UI_FILE }, async (args) => {
      const source = await fs.promises.readFile(args.path, 'utf8');
      const dir = path.relative(path.join(root, 'node_modules', '@fastify', 'swagger-ui'), path.dirname(args.path));
      const own = `require('node:path').join(require('node:path').dirname(require.resolve('@fastify/swagger-ui/package.json')), ${JSON.stringify(dir)})`;
      return { contents: source.replaceAll('__dirname', `(${own})`), loader: 'js' };
    });
  },
};

export async function buildServer() {
  const esbuild = await import('esbuild');
  await esbuild.build({
    entryPoints: [serverEntry],
    outfile: serverBundle,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: EXTERNAL,
    banner: { js: BANNER },
    define: { 'import.meta.url': '__parleyImportMetaUrl' },
    // import() of an external package becomes require(): a script run from a code cache has no
    // loader for import() (every package loaded that way is CommonJS).
    supported: { 'dynamic-import': false },
    plugins: [openApiPlugins],
    legalComments: 'none',
    logLevel: 'warning',
  });
  // V8 checks a code cache against the source's length, not its text: the cache's name carries the
  // bundle's hash, and caches of earlier builds are removed.
  const bundle = fs.readFileSync(serverBundle);
  const hash = crypto.createHash('sha256').update(bundle).digest('hex').slice(0, 16);
  const dist = path.dirname(serverBundle);
  for (const name of fs.readdirSync(dist))
    if (/^server\.[0-9a-f]+\.(cache|schema\.sql)$/.test(name)) fs.rmSync(path.join(dist, name), { force: true });
  await writeSchemaScript(path.join(dist, `server.${hash}.schema.sql`));
  const loader = fs.readFileSync(loaderSource, 'utf8').replace("'%BUNDLE_HASH%'", JSON.stringify(hash));
  fs.writeFileSync(serverLoader, loader);
  await writeCodeCache(path.join(dist, `server.${hash}.cache`));
  return { bytes: bundle.length };
}

/**
 * The PostgreSQL schema snapshot's script, as src/db/schema-snapshot.ts sends it, for dist/main.js
 * to send before it loads the bundle (server-loader.mjs). Read from tsc's output, which the build
 * makes first; without it a new schema is made by the bundle alone.
 */
async function writeSchemaScript(target) {
  const compiled = path.join(root, 'dist', 'db', 'snapshots', 'postgres.gen.js');
  if (!fs.existsSync(compiled)) return;
  const { snapshot } = await import(pathToFileURL(compiled).href);
  fs.writeFileSync(target, snapshot.statements.join(';\n'));
}

/**
 * Starts the built server once on an empty SQLite folder, so that the loader writes the code cache
 * here, where the folder is writable: an installation runs from a read-only folder (deploy/). A
 * failure only leaves the cache to the first start that can write it.
 */
async function writeCodeCache(cacheFile) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-build-'));
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('PARLEY_') && key !== 'DATABASE_URL'));
  const child = spawn(process.execPath, [serverLoader], {
    env: { ...env, PORT: '0', HOST: '127.0.0.1', PARLEY_DATA_DIR: dataDir, PARLEY_WORKERS: 'off', PARLEY_LOG_LEVEL: 'error' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('close', resolve));
  let running = true;
  exited.then(() => (running = false));
  const deadline = Date.now() + 60_000;
  while (running && !fs.existsSync(cacheFile) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  child.kill('SIGTERM');
  await exited;
  fs.rmSync(dataDir, { recursive: true, force: true });
  if (!fs.existsSync(cacheFile)) console.error('parley: no code cache was made at build time; the first start makes it');
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await buildServer();
