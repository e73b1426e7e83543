import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Dependency rules of docs/architecture.md, checked on the sources so they cannot quietly regress:
 * the outbox (src/events) is the one spine of side effects and knows none of its consumers; the
 * consumers (webhooks, the employees' realtime stream, the visitors' sockets, push) read committed
 * events and never import one another; `customers` has one writer.
 */
const SRC = path.resolve(import.meta.dirname, '../src');
const APP = path.resolve(import.meta.dirname, '../web/app/src');

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return filesUnder(full);
    return /\.tsx?$/.test(e.name) && !/\.test\.tsx?$/.test(e.name) ? [full] : [];
  });
}

/** The modules a file imports (static, re-exports and dynamic `import()`), resolved to paths under `root`. */
function importsOf(file: string, text = readFileSync(file, 'utf8'), root = SRC): string[] {
  const specifiers = [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g)].map((m) => m[1] ?? '');
  return specifiers
    .filter((s) => s.startsWith('.'))
    .map((s) =>
      path
        .relative(root, path.resolve(path.dirname(file), s))
        .split(path.sep)
        .join('/'),
    );
}

/** `domain/x.js`, `domain/x.ts` and `pages/X` (the app imports without an extension) name one module. */
function moduleKey(relative: string): string {
  return relative.replace(/\.(js|ts|tsx)$/, '');
}

/** Every import circle among the modules under `root`, each as the list of its modules (Tarjan's strongly connected components). */
function importCircles(root: string): string[][] {
  const graph = new Map<string, string[]>();
  for (const file of filesUnder(root)) {
    const key = moduleKey(path.relative(root, file).split(path.sep).join('/'));
    graph.set(key, importsOf(file, undefined, root).map(moduleKey));
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  let next = 0;
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next);
    next++;
    stack.push(node);
    onStack.add(node);
    for (const target of graph.get(node) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node)!, index.get(target)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || (graph.get(node) ?? []).includes(node)) circles.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return circles;
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

describe('dependencies point down', () => {
  it('domain/ imports no adapter, face or consumer: channels/, connectors/, api/, the outbox consumers', () => {
    expect(violations('domain', ['channels', 'connectors', 'api', ...CONSUMERS])).toEqual([]);
  });

  it('the server has no import circles', () => {
    expect(importCircles(SRC)).toEqual([]);
  });

  it('the agent app has no import circles', () => {
    expect(importCircles(APP)).toEqual([]);
  });

  it('the circle finder finds a circle through three modules and ignores imports leaving the tree', () => {
    const dir = path.join(tmpdir(), `parley-circles-${process.pid}`);
    mkdirSync(path.join(dir, 'a'), { recursive: true });
    writeFileSync(path.join(dir, 'a/one.ts'), "import { two } from './two.js';\nimport x from 'kysely';");
    writeFileSync(path.join(dir, 'a/two.ts'), "import type { Three } from '../three.js';");
    writeFileSync(path.join(dir, 'three.ts'), "export { one } from './a/one.js';\nimport '../outside.js';");
    writeFileSync(path.join(dir, 'four.tsx'), "import { three } from './three';");
    try {
      expect(importCircles(dir)).toEqual([['a/one', 'a/two', 'three']]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
