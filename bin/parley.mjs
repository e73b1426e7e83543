#!/usr/bin/env node
// Operator CLI: `npx parley <command>` or `npm run parley -- <command>`.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureBuilt, root } from '../scripts/ensure-built.mjs';

ensureBuilt();
const { runCli } = await import(pathToFileURL(path.join(root, 'dist', 'cli.js')).href);
process.exit(await runCli(process.argv.slice(2)));
