import { defineConfig } from 'vitest/config';

/** The suites whose example servers talk to PostgreSQL: they run again through PgBouncer. */
const POSTGRES_SUITES = ['test/contract.test.ts', 'test/crashPoints.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 90_000,
    hookTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'direct', include: ['test/**/*.test.ts'] } },
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
