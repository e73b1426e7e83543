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
  },
});
