import type { SQL } from 'drizzle-orm';
import { NodePgSession } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import {
  runTemplate,
  type DrizzleRunner,
  type StatementRunnerFactory,
} from '../drizzle/executeRows.js';
import { bounded } from '../drizzle/statementBound.js';
import type { SessionParts } from './poolTransaction.js';

/** The parts of a pg client the bound reaches: its running query and its socket. */
interface ClientInternals {
  activeQuery?: unknown;
  connection?: { stream?: { destroy(): void } };
}

/** The clients given up at the bound: the pool drops them once their statement settled. */
const abandoned = new WeakSet<pg.PoolClient>();

/** How long a cancel request may take before the connection is dropped all the same. */
const CANCEL_GRACE_MS = 1_000;

/**
 * Gives up `client` at the bound: a cancel request for its running statement (pg's
 * `Client#cancel`, on a connection of its own, with the key the server or PgBouncer gave the
 * client), so that PostgreSQL stops it and releases its locks; if the client is still busy 1 s
 * later (a server or pooler that never answers), its socket is destroyed, which settles every
 * statement waiting on it ("Connection terminated"). The client stays connected meanwhile:
 * PgBouncer forwards a cancel only to a client still connected, and a statement whose client
 * merely went away runs on until its lock wait ends. See {@link releaseAfter}.
 */
export function abandon(pool: pg.Pool, client: pg.PoolClient): void {
  if (abandoned.has(client)) return;
  abandoned.add(client);
  const internals = client as unknown as ClientInternals;
  const destroy = () => internals.connection?.stream?.destroy();
  const active = internals.activeQuery;
  if (active === undefined || active === null) return destroy();
  setTimeout(() => {
    if (internals.activeQuery !== undefined && internals.activeQuery !== null) destroy();
  }, CANCEL_GRACE_MS).unref();
  const canceller = new pg.Client(pool.options);
  const connection = (canceller as unknown as { connection: NodeJS.EventEmitter }).connection;
  connection.on('error', destroy);
  (canceller as unknown as { cancel(client: pg.PoolClient, query: unknown): void }).cancel(
    client,
    active,
  );
}

/**
 * Gives `client` back to the pool once `work` (what ran on it) settled: at once when it was not
 * given up at the bound; else after its statement ended (cancelled, or its socket destroyed by
 * {@link abandon}), with an error, so that the pool drops it rather than hand it out again.
 */
export function releaseAfter(client: pg.PoolClient, work: PromiseLike<unknown> | undefined): void {
  if (!abandoned.has(client)) return client.release();
  const drop = () => client.release(true);
  if (work === undefined) return drop();
  work.then(drop, drop);
}

/**
 * A client of `pool` within `ms`, else a `StatementTimeoutError`: a pool whose connections are
 * all taken waits without a bound of its own (`connectionTimeoutMillis` is the application's).
 * A client that arrives after the bound goes back to the pool.
 */
export async function checkout(pool: pg.Pool, ms: number): Promise<pg.PoolClient> {
  let late = false;
  const connecting = pool.connect();
  try {
    return await bounded(connecting, ms, 'a connection of the pool', () => {
      late = true;
    });
  } catch (error) {
    if (late)
      connecting.then(
        (client) => client.release(),
        () => {},
      );
    throw error;
  }
}

/** A Drizzle runner on one client: what the store's statements run on (its session's parts). */
function runnerOn(client: pg.PoolClient, parts: SessionParts): DrizzleRunner {
  const session = new NodePgSession(client, parts.dialect, parts.schema, parts.options);
  return { execute: (query: SQL) => session.execute(query), _: { session } };
}

/** The pg client a Drizzle node-postgres transaction runs on. */
function clientOf(runner: DrizzleRunner): pg.PoolClient {
  return (runner._.session as unknown as { client: pg.PoolClient }).client;
}

/**
 * The node-postgres statement runner of the store: every statement has the bound `ms`. Outside
 * a transaction a statement checks out a client itself (what `pool.query` does, bounded), runs
 * on it through Drizzle's session (its logger and type parsers), and gives it back; inside one,
 * it runs on the transaction's client. At the bound the call rejects with a
 * `StatementTimeoutError` and the client is given up ({@link abandon}). Statements stay
 * unnamed, as Drizzle sends them: nothing is prepared server-side.
 */
export function boundedRunner(
  pool: pg.Pool,
  parts: SessionParts,
  ms: number,
): StatementRunnerFactory {
  return (runner, inTransaction) => {
    const on = async (
      what: string,
      statement: (target: DrizzleRunner) => PromiseLike<unknown>,
    ): Promise<unknown> => {
      if (inTransaction) {
        const client = clientOf(runner);
        return bounded(statement(runner), ms, what, () => abandon(pool, client));
      }
      const client = await checkout(pool, ms);
      let work: PromiseLike<unknown> | undefined;
      try {
        work = statement(runnerOn(client, parts));
        return await bounded(work, ms, what, () => abandon(pool, client));
      } finally {
        releaseAfter(client, work);
      }
    };
    return {
      execute: (query) => on('a store statement', (target) => target.execute(query)),
      run: (template, values) =>
        on(template.name, (target) => runTemplate(target, template, values)),
    };
  };
}
