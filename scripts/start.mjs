// `npm start`: build if needed, then run the server in this process (signals reach it directly).
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureBuilt, root } from './ensure-built.mjs';

ensureBuilt();
await import(pathToFileURL(path.join(root, 'dist', 'main.js')).href);
