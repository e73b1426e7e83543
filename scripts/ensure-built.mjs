// Builds dist/ when it is missing or older than the sources. Used by `npm start` and the CLI.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function newestMtime(dir) {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(full) : fs.statSync(full).mtimeMs);
  }
  return newest;
}

/** Rebuilds dist/widget/widget.js when web/ is newer (esbuild is a dev dependency: without it, a warning). */
function ensureWidgetBuilt() {
  const web = path.join(root, 'web');
  if (!fs.existsSync(web)) return;
  const bundle = path.join(root, 'dist', 'widget', 'widget.js');
  const bundledAt = fs.existsSync(bundle) ? fs.statSync(bundle).mtimeMs : 0;
  if (bundledAt >= newestMtime(web)) return;
  try {
    execFileSync(process.execPath, [path.join(root, 'scripts', 'build-widget.mjs')], { stdio: 'inherit', cwd: root });
  } catch {
    console.error('parley: could not build the site widget (npm run build); /widget.js may be stale or missing');
  }
}

/** Rebuilds the agent app (dist/web/app) when web/app is newer (vite is a dev dependency: without it, a warning). */
function ensureAppBuilt() {
  const app = path.join(root, 'web', 'app');
  if (!fs.existsSync(app)) return;
  const index = path.join(root, 'dist', 'web', 'app', 'index.html');
  const builtAt = fs.existsSync(index) ? fs.statSync(index).mtimeMs : 0;
  if (builtAt >= newestMtime(app)) return;
  try {
    execFileSync(process.execPath, [path.join(root, 'scripts', 'build-app.mjs')], { stdio: 'inherit', cwd: root });
  } catch {
    console.error('parley: could not build the agent app (npm run build); / shows the landing page until it is built');
  }
}

export function ensureBuilt() {
  ensureWidgetBuilt();
  ensureAppBuilt();
  const stamp = path.join(root, 'dist', '.built');
  const builtAt = fs.existsSync(stamp) ? fs.statSync(stamp).mtimeMs : 0;
  const sourcesAt = Math.max(newestMtime(path.join(root, 'src')), fs.statSync(path.join(root, 'package.json')).mtimeMs);
  if (builtAt >= sourcesAt) return;
  console.error('parley: building (npm run build)...');
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  execFileSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json')], { stdio: 'inherit', cwd: root });
  execFileSync(process.execPath, [path.join(root, 'scripts', 'build-server.mjs')], { stdio: 'inherit', cwd: root });
  fs.writeFileSync(stamp, new Date().toISOString());
}
