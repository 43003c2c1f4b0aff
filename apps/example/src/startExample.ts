import type { AddressInfo } from 'node:net';
import { createReaper, idemResponseMeta } from '@idem/server';
import { createHTTPServer } from '@trpc/server/adapters/standalone';
import { createAppRouter } from './createAppRouter.js';
import { createContext } from './createContext.js';
import { Faults } from './Faults.js';
import { describeError, type JsonLogger } from './jsonLogger.js';
import { openDatabase, type AppDatabase } from './openDatabase.js';
import type { ExampleConfig } from './readConfig.js';
import { StandInProcessor } from './StandInProcessor.js';

/** How often the completer looks for abandoned payments. idem's default is 5 s. */
export const COMPLETER_INTERVAL_MS = 1_000;
/** How often the reaper deletes records past their cleanup time. idem's default. */
export const REAPER_INTERVAL_MS = 60_000;

/** A running example server. */
export interface RunningExample extends AsyncDisposable {
  /** The tRPC endpoint, e.g. `http://127.0.0.1:3000/trpc`. */
  url: string;
  database: AppDatabase;
  /** Stops accepting requests, stops the workers, closes the database. */
  close(): Promise<void>;
}

/**
 * Opens (and migrates) the database, serves the payments API on 127.0.0.1, and runs idem's two
 * workers in the same process: the completer (finishes abandoned payments from their recovery
 * point) and the reaper (deletes records past their cleanup time).
 */
export async function startExample(
  config: ExampleConfig,
  log: JsonLogger,
): Promise<RunningExample> {
  const database = await openDatabase({ ...config, log });
  const faults = new Faults(config.crashAt, config.dropRate, log);
  const processor = new StandInProcessor(database.db, config.processorLatencyMs, log);
  const { router, idem } = createAppRouter({
    db: database.db,
    store: database.store,
    processor,
    faults,
    log,
    leaseMs: config.leaseMs,
  });

  const completer = idem.completer({
    router,
    // The context a record's procedure runs in: its caller's account is the record's scope.
    createContext: (record) => ({ accountId: record.scope, origin: 'completer' as const }),
    intervalMs: COMPLETER_INTERVAL_MS,
    leaseMs: config.leaseMs,
    onReport: (report) => report.taken > 0 && log({ msg: 'completer.run', ...report }),
    onError: (error) => log({ msg: 'completer.error', error: describeError(error) }),
  });
  const reaper = createReaper({
    store: database.store,
    intervalMs: REAPER_INTERVAL_MS,
    onReport: ({ deleted, stuck }) => {
      const attention =
        stuck.abandoned + stuck.pendingTooLong + stuck.outcomeUnknown + stuck.needsReconciliation;
      if (deleted > 0 || attention > 0) log({ msg: 'reaper.run', deleted, stuck });
    },
    onError: (error) => log({ msg: 'reaper.error', error: describeError(error) }),
  });

  const server = createHTTPServer({
    router,
    basePath: '/trpc/',
    createContext,
    responseMeta: idemResponseMeta,
    middleware: faults.middleware,
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, '127.0.0.1', resolve);
  });
  completer.start();
  reaper.start();
  const { port } = server.address() as AddressInfo;

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await Promise.all([completer.stop(), reaper.stop()]);
      await database.close();
    })());
  return {
    url: `http://127.0.0.1:${port}/trpc`,
    database,
    close,
    [Symbol.asyncDispose]: close,
  };
}
