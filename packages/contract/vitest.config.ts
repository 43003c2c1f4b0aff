import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Beside the code: no database, no child process (`pnpm test:unit`). Unit files share one
    // module graph (`isolate: false`): none mocks a module, each unstubs what it stubs.
    projects: [
      { extends: true, test: { name: 'unit', include: ['src/**/*.test.ts'], isolate: false } },
    ],
  },
});
