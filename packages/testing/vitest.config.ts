import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 90_000,
    hookTimeout: 60_000,
    // The suites start servers and PGlite: on 2 cores, files run one at a time.
    fileParallelism: false,
    projects: [
      // Beside the code: no database, no server (`pnpm test:unit`).
      { extends: true, test: { name: 'unit', include: ['src/**/*.test.ts'], isolate: false } },
      // The gates against small routers on PGlite and PostgreSQL.
      { extends: true, test: { name: 'integration', include: ['test/**/*.test.ts'] } },
    ],
  },
});
