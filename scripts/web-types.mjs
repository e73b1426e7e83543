// The last step of `npm run web:types` (package.json): copies the agent app's API types, generated
// from the built server's v1.3 OpenAPI document into dist/openapi-v1.3.gen.ts, to
// web/app/src/api/openapi.gen.ts only when their text changed: a rewrite of the same text would make
// the built app look older than its sources, and every process that checks (scripts/ensure-built.mjs:
// `npm start`, the tests) would build it again, several test files at once.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const generated = path.join(root, 'dist', 'openapi-v1.3.gen.ts');
const target = path.join(root, 'web', 'app', 'src', 'api', 'openapi.gen.ts');

const text = fs.readFileSync(generated, 'utf8');
const current = fs.existsSync(target) ? fs.readFileSync(target, 'utf8') : undefined;
if (text !== current) fs.writeFileSync(target, text);
console.log(`parley: ${path.relative(root, target)} ${text === current ? 'unchanged' : 'written'}`);
