import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // The suites start servers, child processes and PGlite: on 2 cores, files run one at a time.
    fileParallelism: false,
    projects: [
      // Beside the code, and test/unit: no database, no child process (`pnpm test:unit`). Unit
      // files share one module graph (`isolate: false`): none mocks a module, each unstubs what
      // it stubs.
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts', 'test/unit/**/*.test.ts'],
          isolate: false,
        },
      },
      // Servers, child processes, PGlite and PostgreSQL.
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/unit/**'],
        },
      },
    ],
  },
});
