/// <reference types="node" />

/**
 * The default of `statementTimeoutMs` (the postgres.js and node-postgres stores): 10 s. Every
 * statement idem runs takes milliseconds; the longest legitimate wait is a claim behind another
 * request's uncommitted claim, `lockTimeoutMs` (2 s by default). 10 s is five times that, and
 * shorter than the 30 to 60 s after which gateways and clients give up on their own, so a caller
 * gets idem's 503 with `Retry-After` rather than a gateway's timeout; a request runs at most a
 * handful of store statements, so no request waits on the store for minutes.
 */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 10_000;

/** The largest bound a timer takes (`setTimeout` fires at once past 2^31 - 1 ms). */
const MAX_STATEMENT_TIMEOUT_MS = 2_147_483_647;

/**
 * `statementTimeoutMs` checked at start-up: an integer number of milliseconds from 1 to
 * 2^31 - 1, else a RangeError naming the option. Undefined is the default.
 */
export function statementTimeout(ms: number | undefined): number {
  if (ms === undefined) return DEFAULT_STATEMENT_TIMEOUT_MS;
  if (!Number.isSafeInteger(ms) || ms < 1 || ms > MAX_STATEMENT_TIMEOUT_MS) {
    throw new RangeError(
      `statementTimeoutMs must be an integer number of milliseconds from 1 to ` +
        `${MAX_STATEMENT_TIMEOUT_MS} (every statement of the store has a bound; the default is ` +
        `${DEFAULT_STATEMENT_TIMEOUT_MS}), got ${String(ms)}`,
    );
  }
  return ms;
}

/** SQLSTATE 57014 `query_canceled`, PostgreSQL's own code for a statement it timed out. */
export const QUERY_CANCELED = '57014';

/**
 * A store statement (or its transaction's BEGIN or COMMIT) that did not answer within
 * `statementTimeoutMs`: the store cancelled it and gave up on it. Whether it took effect is
 * unknown (a cancel can cross the answer), as in an outage: the server answers the call with
 * the store's 503 and `Retry-After`, and a retry with the same key finds whatever it left.
 * Carries SQLSTATE 57014 (`query_canceled`), the code of PostgreSQL's own `statement_timeout`.
 */
export class StatementTimeoutError extends Error {
  readonly code = QUERY_CANCELED;

  constructor(what: string, ms: number) {
    super(
      `idem: ${what} did not answer within statementTimeoutMs (${ms} ms); the store cancelled ` +
        'it. Nothing can be said of its effect: retry with the same key.',
    );
    this.name = 'StatementTimeoutError';
  }
}

const noop = () => {};

/**
 * `work` with a bound: it rejects with a {@link StatementTimeoutError} `ms` after the call,
 * unless `work` settled first; `onTimeout` then cancels what it can (the driver's cancel
 * request). Whatever `work` answers after that is dropped.
 */
export function bounded<T>(
  work: PromiseLike<T>,
  ms: number,
  what: string,
  onTimeout: () => void = noop,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new StatementTimeoutError(what, ms));
      try {
        onTimeout();
      } catch {
        // A cancel that fails to start leaves the call answered all the same.
      }
    }, ms);
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/**
 * A Drizzle `transaction` whose own statements are bounded: from the call until the callback
 * starts (waiting for a connection, then BEGIN) and from the callback's end until the
 * transaction settles (COMMIT, or ROLLBACK) each take at most `ms`, else the call rejects with a
 * {@link StatementTimeoutError} and `onTimeout` gets the transaction's connection (the `tx`
 * seen, when the callback ran) to cancel or drop. The callback itself (the application's
 * handler) is not bounded here: the store's statements inside it are, one by one. A callback
 * that starts after its transaction was given up throws at once, so the transaction rolls back.
 */
export function boundedTransaction<TTx>(
  transaction: <T>(fn: (tx: TTx) => Promise<T>) => Promise<T>,
  ms: number,
  onTimeout: (tx: TTx | undefined) => void = noop,
): <T>(fn: (tx: TTx) => Promise<T>) => Promise<T> {
  return <T>(fn: (tx: TTx) => Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      let given: TTx | undefined;
      let expired = false;
      let timer: NodeJS.Timeout | undefined;
      const arm = (what: string) => {
        timer = setTimeout(() => {
          expired = true;
          reject(new StatementTimeoutError(what, ms));
          try {
            onTimeout(given);
          } catch {
            // As in `bounded`: the call is answered whatever the cancel does.
          }
        }, ms);
      };
      arm("a transaction's BEGIN");
      transaction(async (tx) => {
        clearTimeout(timer);
        given = tx;
        if (expired) throw new StatementTimeoutError("a transaction's BEGIN", ms);
        try {
          return await fn(tx);
        } finally {
          if (!expired) arm("a transaction's COMMIT or ROLLBACK");
        }
      }).then(
        (value) => {
          clearTimeout(timer);
          if (!expired) resolve(value);
        },
        (error: unknown) => {
          clearTimeout(timer);
          if (!expired) reject(error);
        },
      );
    });
}
