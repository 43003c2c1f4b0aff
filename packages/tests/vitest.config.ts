import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Installs a package into the workspace: minutes on a cold, busy machine.
    testTimeout: 300_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
