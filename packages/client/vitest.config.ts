import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      {
        // Beside the code, and the link against a tRPC server of its own: no database, no child
        // process (`pnpm test:unit`); the link against idem's middleware on PostgreSQL is in
        // packages/tests. Unit files share one module graph (`isolate: false`): none mocks a
        // module, each unstubs what it stubs.
        extends: true,
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
          isolate: false,
        },
      },
    ],
  },
});
