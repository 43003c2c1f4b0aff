import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Beside the code, and the schema read from its files: no database (`pnpm test:unit`). Unit files
 * share one module graph (`isolate: false`): none mocks a module, each unstubs what it stubs.
 */
const UNIT = ['src/**/*.test.ts', 'test/schema.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT, isolate: false } },
      {
        // The store on PGlite and PostgreSQL, and the drivers losing their server.
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
