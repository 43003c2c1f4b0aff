import type { PgDialect, PgTransactionConfig } from 'drizzle-orm/pg-core';
import { NodePgSession, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import type pg from 'pg';
import { boundedTransaction } from '../drizzle/statementBound.js';
import { abandon, checkout, releaseAfter } from './boundedStatements.js';

/** The parts of Drizzle's node-postgres session a transaction of its own is made of. */
export interface SessionParts {
  dialect: PgDialect;
  schema: ConstructorParameters<typeof NodePgSession>[2];
  options: ConstructorParameters<typeof NodePgSession>[3];
}

export function partsOf(db: NodePgDatabase<Record<string, unknown>>): SessionParts {
  const session: unknown = db._.session;
  if (!(session instanceof NodePgSession)) {
    throw new TypeError('createNodePostgresStore needs a database from drizzle-orm/node-postgres');
  }
  return session as unknown as SessionParts;
}

/**
 * `db.transaction` for the store, on a client it checks out of `pool` itself and always gives
 * back. Drizzle's node-postgres session (0.45) checks a client out and sends BEGIN before its
 * `try`: a BEGIN that fails (the client's connection died while it sat idle in the pool) never
 * releases the client, and each outage leaks a pool slot for good, until every request waits
 * for a connection that never comes. Here Drizzle runs the transaction on the checked-out
 * client (a session on one client neither checks out nor releases), and the `finally` here
 * releases it; pg's pool drops a client whose connection failed. This is the only code that
 * reaches Drizzle's session (its dialect, schema and options: the query logger), with
 * `boundedStatements.ts`.
 *
 * Bounded by `ms` (`statementTimeoutMs`): the checkout, BEGIN, and COMMIT or ROLLBACK each;
 * at the bound the call rejects with a `StatementTimeoutError`, the client is given up
 * (a cancel request, then its socket destroyed if still busy: `abandon`) and the pool drops
 * it once the transaction settled (`releaseAfter`).
 */
export function poolTransaction(
  db: NodePgDatabase<Record<string, unknown>>,
  pool: pg.Pool,
  ms: number,
): NodePgDatabase<Record<string, unknown>>['transaction'] {
  const { dialect, schema, options } = partsOf(db);
  return async (transaction, config?: PgTransactionConfig) => {
    const client = await checkout(pool, ms);
    let work: Promise<unknown> | undefined;
    try {
      const session = new NodePgSession(client, dialect, schema, options);
      const run = boundedTransaction<Parameters<typeof transaction>[0]>(
        (fn) => (work = session.transaction(fn, config)),
        ms,
        () => abandon(pool, client),
      );
      return await run(transaction);
    } finally {
      releaseAfter(client, work);
    }
  };
}
