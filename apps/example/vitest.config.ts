import { configDefaults, defineConfig } from 'vitest/config';

/**
 * The docs' samples against their files: no database, no child process (`pnpm test:unit`). Unit
 * files share one module graph (`isolate: false`): none mocks a module, each unstubs what it stubs.
 */
const UNIT = ['test/docsSamples.test.ts'];

/** The suites whose example servers talk to PostgreSQL: they run again through PgBouncer. */
const POSTGRES_SUITES = ['test/contract.test.ts', 'test/crashPoints.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 90_000,
    hookTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT, isolate: false } },
      {
        extends: true,
        test: {
          name: 'direct',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...UNIT],
        },
      },
      {
        // The same suites with every example server's DATABASE_URL rewritten to go through a
        // private PgBouncer 1.18 in transaction mode (test/fixtures/pgBouncerSetup.ts).
        extends: true,
        test: {
          name: 'pgbouncer',
          include: POSTGRES_SUITES,
          globalSetup: ['test/fixtures/pgBouncerSetup.ts'],
        },
      },
    ],
  },
});
