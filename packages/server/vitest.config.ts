import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // The suites start servers, child processes and PGlite: on 2 cores, files run one at a time.
    fileParallelism: false,
  },
});
