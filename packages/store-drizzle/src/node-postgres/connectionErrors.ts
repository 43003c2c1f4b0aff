import type { Pool, PoolClient } from 'pg';

/** Where a pool's connection failures are reported: `NodePostgresStoreOptions.onWarning`. */
export type WarningSink = (message: string) => void;

/** The default sink. One function, so that stores on one pool share it (see {@link watch}). */
export const warnOnConsole: WarningSink = (message) => console.warn(message);

/** A pool's listeners: attached once, whatever the number of stores on the pool. */
interface Watch {
  sinks: Set<WarningSink>;
  /** The failures reported since a connection last opened, by {@link signature}. */
  reported: Set<string>;
}

const watches = new WeakMap<Pool, Watch>();

/** What tells one failure from another: the socket's or PostgreSQL's code, else the message. */
function signature(error: unknown): string {
  if (typeof error !== 'object' || error === null) return String(error);
  const { code, message } = error as { code?: unknown; message?: unknown };
  return typeof code === 'string' ? code : String(message);
}

function describe(error: unknown): string {
  if (typeof error !== 'object' || error === null) return String(error);
  const { code, message } = error as { code?: unknown; message?: unknown };
  return typeof code === 'string' ? `${String(message)} (${code})` : String(message);
}

/**
 * Keeps the process alive when a connection of `pool` dies, and reports each distinct failure
 * once through `onWarning` until a connection opens again.
 *
 * pg emits an 'error' event on a client whose connection dies (a server that restarts, a
 * network that drops, a backend terminated), and Node ends the process for an 'error' event
 * that no one listens to. The pool listens to its idle clients and emits their failures as its
 * own 'error' event: `pool.on('error', ...)` is the fix pg documents, but only for idle clients.
 * A client the pool has handed out (every Drizzle transaction holds one from BEGIN to COMMIT)
 * has no listener of the pool's, and its failure ends the process even with one on the pool.
 * So a listener goes on the pool and on every client the pool hands out ('acquire'). The
 * statements that were running fail with the error as pg gives it; the pool drops the client.
 */
export function watch(pool: Pool, onWarning: WarningSink): void {
  const existing = watches.get(pool);
  if (existing !== undefined) {
    existing.sinks.add(onWarning);
    return;
  }
  const state: Watch = { sinks: new Set([onWarning]), reported: new Set() };
  watches.set(pool, state);
  const seen = new WeakSet<object>();
  const report = (error: unknown) => {
    // A failing idle client reaches both listeners, its own and the pool's, with one error.
    if (typeof error === 'object' && error !== null) {
      if (seen.has(error)) return;
      seen.add(error);
    }
    const key = signature(error);
    if (state.reported.has(key)) return;
    state.reported.add(key);
    const message =
      `idem: a connection of the store's pg Pool failed: ${describe(error)}. The pool drops it ` +
      'and opens another for the next statement; this is said once until a connection opens again.';
    for (const sink of state.sinks) sink(message);
  };
  const guarded = new WeakSet<PoolClient>();
  pool.on('error', report);
  pool.on('acquire', (client) => {
    if (guarded.has(client)) return;
    guarded.add(client);
    client.on('error', report);
  });
  pool.on('connect', () => state.reported.clear());
}
