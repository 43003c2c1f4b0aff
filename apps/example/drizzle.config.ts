import { defineConfig } from 'drizzle-kit';

/** Generates the example's own SQL migrations from `src/schema.ts`: `pnpm generate` here. */
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/schema.ts',
  out: './migrations',
});
