import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { conditions: ['@idem/source'] },
  test: { include: ['src/**/*.test.ts', 'test/**/*.test.ts'] },
});
