import fs from 'node:fs';

/** Parley's version, from package.json (one folder above both src/ and dist/). */
export const VERSION: string = (JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string })
  .version;
