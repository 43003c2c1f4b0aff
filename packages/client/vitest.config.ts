import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Beside the code, and the link against a tRPC server of its own: no database, no child process
 * (`pnpm test:unit`). Unit files share one module graph (`isolate: false`): none mocks a module,
 * each unstubs what it stubs.
 */
const UNIT = ['src/**/*.test.ts', 'test/idemLink.test.ts', 'test/idemLinkOptions.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT, isolate: false } },
      {
        // The link against idem's middleware on PostgreSQL.
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
