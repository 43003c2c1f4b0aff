import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 250_000, // the smoke bench on a busy 2-core machine: bounded, never a timing assertion
    hookTimeout: 60_000,
  },
});
