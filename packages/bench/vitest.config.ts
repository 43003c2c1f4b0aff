import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { conditions: ['@idem/source', 'module', 'node', 'import', 'default'] },
  ssr: { resolve: { conditions: ['@idem/source', 'node', 'import', 'default'] } },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 90_000,
    hookTimeout: 60_000,
  },
});
