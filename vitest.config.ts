import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';

// The multi-process suite starts several servers on one PostgreSQL database: what it checks
// (limits, idempotency, pushes, files, pollers shared through the database) exists only there.
const postgres = /^postgres(ql)?:\/\//i.test(process.env.DATABASE_URL ?? '');

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'web/app/**/*.test.ts'],
    exclude: [...configDefaults.exclude, ...(postgres ? [] : ['test/multiprocess/**'])],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file gets its own database (SQLite in memory, or a PostgreSQL schema): files run in parallel.
    fileParallelism: true,
    // Two workers at least: Vitest's default leaves a core to itself, which ran the files one after
    // another on a 2-core machine, while much of a file's time is spent waiting (PostgreSQL, the
    // browser, child processes). And a worker keeps the modules it has loaded for its next file:
    // loading the server's modules anew for each file was a third of the suite's time. What a module
    // keeps between files is the process's, as in a server (the metrics, the outbox signal);
    // everything a test file asserts on is per harness (docs/architecture.md, "Tests").
    maxWorkers: Math.max(2, availableParallelism() - 1),
    isolate: false,
  },
});
