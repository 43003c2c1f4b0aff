import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { conditions: ['@idem/source', 'module', 'node', 'import', 'default'] },
  ssr: { resolve: { conditions: ['@idem/source', 'node', 'import', 'default'] } },
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // The suites start servers, child processes and PGlite: on 2 cores, files run one at a time.
    fileParallelism: false,
  },
});
