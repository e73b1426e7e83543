// Bundles the site widget (web/widget/, TypeScript) into dist/widget/widget.js, served at /widget.js.
// Run by `npm run build`, and by ensure-built (npm start) when web/ is newer than the bundle.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const widgetEntry = path.join(root, 'web', 'widget', 'widget.ts');
export const widgetBundle = path.join(root, 'dist', 'widget', 'widget.js');
/** The budget for the bundle, gzipped. */
export const WIDGET_GZIP_BUDGET = 60 * 1024;

export async function buildWidget({ quiet = false } = {}) {
  const esbuild = await import('esbuild');
  await esbuild.build({
    entryPoints: [widgetEntry],
    outfile: widgetBundle,
    bundle: true,
    minify: true,
    format: 'iife',
    target: ['es2020'],
    legalComments: 'none',
    logLevel: 'warning',
  });
  const gzipped = zlib.gzipSync(fs.readFileSync(widgetBundle)).length;
  if (!quiet) console.error(`parley: built ${path.relative(root, widgetBundle)} (${gzipped} bytes gzipped)`);
  if (gzipped > WIDGET_GZIP_BUDGET) throw new Error(`widget bundle is ${gzipped} bytes gzipped, over the ${WIDGET_GZIP_BUDGET} budget`);
  return { gzipped };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  buildWidget().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
