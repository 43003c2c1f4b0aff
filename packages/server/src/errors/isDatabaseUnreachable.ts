/** Error codes of a database that cannot be reached: the driver's, the socket's, PostgreSQL's. */
const UNREACHABLE_CODES = new Set([
  // postgres.js
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  // the socket
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  // PostgreSQL: admin_shutdown, crash_shutdown, cannot_connect_now (class 08 below)
  '57P01',
  '57P02',
  '57P03',
  // query_canceled: PostgreSQL's statement_timeout, or the store's own statement bound
  // (`statementTimeoutMs`, StatementTimeoutError) cancelling a statement that did not answer
  '57014',
]);

/**
 * node-postgres (`pg`, `pg-pool`) gives a connection lost under a statement, a client left
 * unusable by that loss, and a connection that timed out no code: their messages, whole, are the
 * only sign. Matched exactly, so that no handler's own message can pass for one.
 */
const UNREACHABLE_MESSAGES = new Set([
  'Connection terminated unexpectedly',
  'Client has encountered a connection error and is not queryable',
  'Connection terminated due to connection timeout',
  // pg-pool: no client became free within `connectionTimeoutMillis`; pg: `query_timeout` passed
  'timeout exceeded when trying to connect',
  'Query read timeout',
]);

/**
 * Whether `error`, or an error it wraps, says the database could not be reached or went away
 * (a connection refused, closed or timed out, by code or, for node-postgres, by message;
 * SQLSTATE class 08; a server shutting down or starting up; a statement cancelled after its
 * time bound). A handler that failed that way failed with the store: its answer is the store's
 * 503 with Retry-After, not a 500 that a client would not retry.
 */
export function isDatabaseUnreachable(error: unknown): boolean {
  let current = error;
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth++) {
    const code = 'code' in current ? current.code : undefined;
    if (typeof code === 'string' && (UNREACHABLE_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code))) {
      return true;
    }
    if (
      code === undefined &&
      current instanceof Error &&
      UNREACHABLE_MESSAGES.has(current.message)
    ) {
      return true;
    }
    current = 'cause' in current ? current.cause : undefined;
  }
  return false;
}
