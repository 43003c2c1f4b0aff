import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    environment: 'happy-dom',
    // Beside the code: no database, no child process, no browser (`pnpm test:unit`). Unit files
    // share one module graph (`isolate: false`): none mocks a module, each unstubs what it stubs.
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['src/**/*.test.ts', 'src/**/*.test.tsx'], isolate: false },
      },
    ],
  },
});
