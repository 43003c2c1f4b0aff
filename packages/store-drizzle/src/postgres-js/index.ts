export { createPostgresJsStore } from './createPostgresJsStore.js';
export type {
  PostgresJsIdempotencyStore,
  PostgresJsStoreOptions,
} from './createPostgresJsStore.js';
export { detectTransactionPooler } from './detectTransactionPooler.js';
export type { DetectTransactionPoolerOptions } from './detectTransactionPooler.js';
export { migrate } from './migrate.js';
export { PreparedStatementsBehindPoolerError } from './poolerCheck.js';
export { StatementTimeoutError, DEFAULT_STATEMENT_TIMEOUT_MS } from '../drizzle/statementBound.js';
