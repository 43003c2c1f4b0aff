export { createNodePostgresStore } from './createNodePostgresStore.js';
export type {
  NodePostgresIdempotencyStore,
  NodePostgresStoreOptions,
} from './createNodePostgresStore.js';
export { migrate } from './migrate.js';
