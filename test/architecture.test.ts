import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Dependency rules of docs/architecture.md, checked on the sources so they cannot quietly regress:
 * the outbox (src/events) is the one spine of side effects and knows none of its consumers; the
 * consumers (webhooks, the employees' realtime stream, the visitors' sockets, push) read committed
 * events and never import one another; `customers` has one writer.
 */
const SRC = path.resolve(import.meta.dirname, '../src');

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return filesUnder(full);
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

/** The modules a file imports (static, re-exports and dynamic `import()`), resolved to paths under src/. */
function importsOf(file: string, text = readFileSync(file, 'utf8')): string[] {
  const specifiers = [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g)].map((m) => m[1] ?? '');
  return specifiers
    .filter((s) => s.startsWith('.'))
    .map((s) =>
      path
        .relative(SRC, path.resolve(path.dirname(file), s))
        .split(path.sep)
        .join('/'),
    );
}

function violations(folder: string, forbidden: string[]): string[] {
  return filesUnder(path.join(SRC, folder)).flatMap((file) =>
    importsOf(file)
      .filter((target) => forbidden.some((f) => target === f || target.startsWith(`${f}/`) || target === `${f}.js`))
      .map((target) => `${path.relative(SRC, file)} imports ${target}`),
  );
}

const CONSUMERS = ['webhooks', 'realtime', 'visitor-push', 'push'];

describe('the outbox is the one spine of side effects', () => {
  it('events/ imports none of its consumers, nor the REST face', () => {
    expect(violations('events', [...CONSUMERS, 'api'])).toEqual([]);
  });

  for (const consumer of CONSUMERS) {
    it(`${consumer}/ imports no other consumer of the outbox`, () => {
      expect(
        violations(
          consumer,
          CONSUMERS.filter((c) => c !== consumer),
        ),
      ).toEqual([]);
    });
  }

  it('the import scan sees every kind of import it checks for (so an empty answer means something)', () => {
    const file = path.join(SRC, 'events/x.ts');
    const text = [
      "import { a } from '../webhooks/a.js';",
      "import type { B } from '../realtime/b.js';",
      "export { c } from '../api/versions.js';",
      "const d = await import('../visitor-push/d.js');",
      "import '../push/e.js';",
      "import pg from 'pg';",
    ].join('\n');
    expect(importsOf(file, text)).toEqual(['webhooks/a.js', 'realtime/b.js', 'api/versions.js', 'visitor-push/d.js', 'push/e.js']);
  });
});

describe('one writer per table', () => {
  it('customers are inserted, updated and deleted only in domain/customers/customers.repo.ts', () => {
    const writes = filesUnder(SRC).flatMap((file) => {
      const text = readFileSync(file, 'utf8');
      const hits = [...text.matchAll(/\.(insertInto|updateTable|deleteFrom)\(\s*['"]customers['"]\s*\)/g)].map((m) => m[1]);
      return hits.length ? [`${path.relative(SRC, file).split(path.sep).join('/')}: ${hits.join(', ')}`] : [];
    });
    expect(writes.filter((w) => !w.startsWith('domain/customers/customers.repo.ts:'))).toEqual([]);
    expect(writes.some((w) => w.startsWith('domain/customers/customers.repo.ts:'))).toBe(true);
  });
});
