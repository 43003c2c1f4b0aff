export { createPostgresJsStore } from './createPostgresJsStore.js';
export type { PostgresJsIdempotencyStore } from './createPostgresJsStore.js';
export { migrate } from './migrate.js';
