// Bundles the server (src/main.ts and what it imports, packages included) into dist/main.js, so
// that a start reads and compiles one file instead of resolving ~1,000 modules (docs/performance.md,
// "Start-up"). Run by `npm run build` and by ensure-built after tsc, whose dist/ the CLI and the
// worker commands keep using. Packages stay outside the bundle when they are native, optional, read
// files beside their own code, or are loaded only when a feature is used.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const serverEntry = path.join(root, 'src', 'main.ts');
export const serverBundle = path.join(root, 'dist', 'main.js');

const EXTERNAL = [
  'better-sqlite3', // native
  '@node-rs/argon2', // native
  'pg-native', // pg's optional native driver
  'nodemailer', // loaded when mail is sent
  'web-push', // loaded when a push is sent
  '@mtcute/*', // the bridge connectors' (CLI)
  'baileys',
];

// Packages written as CommonJS call require(), __filename and __dirname: the bundle is an ES module.
const BANNER = [
  "import { createRequire as __parleyRequire } from 'node:module';",
  "import { fileURLToPath as __parleyPath } from 'node:url';",
  "import { dirname as __parleyDir } from 'node:path';",
  'const require = __parleyRequire(import.meta.url);',
  'const __filename = __parleyPath(import.meta.url);',
  'const __dirname = __parleyDir(__filename);',
].join(' ');

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
    format: 'esm',
    target: 'node20',
    external: EXTERNAL,
    banner: { js: BANNER },
    plugins: [openApiPlugins],
    legalComments: 'none',
    logLevel: 'warning',
  });
  return { bytes: fs.statSync(serverBundle).size };
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await buildServer();
