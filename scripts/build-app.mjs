// Builds the agent web app (web/app, React + Vite) into dist/web/app and prints the gzipped size of
// the JavaScript a first visit loads. `npm run build` runs it; ensure-built.mjs calls buildApp().
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const APP_OUT = path.join(root, 'dist', 'web', 'app');

/** Gzipped bytes of the JS index.html loads up front (entry script + modulepreloads). */
export function initialJsGzipped(outDir = APP_OUT) {
  const html = fs.readFileSync(path.join(outDir, 'index.html'), 'utf8');
  const files = new Set();
  for (const m of html.matchAll(/<script[^>]+src="\/([^"]+\.js)"/g)) files.add(m[1]);
  for (const m of html.matchAll(/<link[^>]+rel="modulepreload"[^>]+href="\/([^"]+\.js)"/g)) files.add(m[1]);
  let total = 0;
  for (const f of files) total += zlib.gzipSync(fs.readFileSync(path.join(outDir, f)), { level: 9 }).length;
  return { files: [...files], gzipped: total };
}

export async function buildApp({ quiet = false } = {}) {
  // A production build even when called from a test run (vitest sets NODE_ENV=test).
  process.env.NODE_ENV = 'production';
  const { build } = await import('vite');
  await build({ mode: 'production', configFile: path.join(root, 'web', 'app', 'vite.config.ts'), logLevel: quiet ? 'silent' : 'warn' });
  const size = initialJsGzipped();
  if (!quiet) console.log(`parley: built dist/web/app (initial JavaScript ${(size.gzipped / 1024).toFixed(1)} KiB gzipped)`);
  return size;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await buildApp();
}
