export { createNodePostgresStore } from './createNodePostgresStore.js';
export type {
  NodePostgresIdempotencyStore,
  NodePostgresStoreOptions,
} from './createNodePostgresStore.js';
export { migrate } from './migrate.js';
export { StatementTimeoutError, DEFAULT_STATEMENT_TIMEOUT_MS } from '../drizzle/statementBound.js';
