import { configDefaults, defineConfig } from 'vitest/config';

/**
 * The report's pure functions: no database, no child process (`pnpm test:unit`). Unit files share
 * one module graph (`isolate: false`): none mocks a module, each unstubs what it stubs.
 */
const UNIT = ['test/attributeProfile.test.ts', 'test/medianInterval.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 250_000, // the smoke bench on a busy 2-core machine: bounded, never a timing assertion
    hookTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT, isolate: false } },
      {
        // The smoke bench: servers in child processes, on PGlite and PostgreSQL.
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...UNIT],
        },
      },
    ],
  },
});
