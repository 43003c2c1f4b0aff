import { defineConfig } from 'drizzle-kit';

/** Generates the shipped SQL migrations from `src/schema.ts`: `pnpm generate` in this package. */
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/schema.ts',
  out: './migrations',
});
