import { defineConfig } from 'vitest/config';

/** `npm run chaos` (scripts/chaos.mjs): the standing reliability suite, apart from the tests. */
export default defineConfig({
  test: {
    include: ['chaos/**/*.chaos.ts'],
    pool: 'forks',
    testTimeout: 600_000,
    hookTimeout: 120_000,
    // The kill run owns the machine's attention while it measures; the others are in-process.
    fileParallelism: false,
  },
});
