import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The installation's root folder (package.json, dist/, web/). This module sits one folder below it
 * in every layout: src/ (tests), dist/ (the compiled modules) and dist/server.cjs (the bundled server).
 */
export const ROOT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
