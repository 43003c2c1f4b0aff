import { defineConfig } from 'vitest/config';

/** One suite: the app built and started, driven in Chromium (the build takes most of the time). */
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 240_000,
  },
});
