import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createReaper, idemCors, idemResponseMeta } from '@idem/server';
import { createHTTPServer } from '@trpc/server/adapters/standalone';
import { checkoutPage } from './checkout/checkoutPage.js';
import { DEV_SECRET_HEADER, faultControl, newDevSecret } from './checkout/faultControl.js';
import { createAppRouter } from './createAppRouter.js';
import { appContext } from './createContext.js';
import { Faults } from './Faults.js';
import { describeError, type JsonLogger } from './jsonLogger.js';
import { openDatabase, type AppDatabase } from './openDatabase.js';
import type { ExampleConfig } from './readConfig.js';
import { StandInProcessor } from './StandInProcessor.js';

/** How often the completer looks for abandoned payments. idem's default is 5 s. */
export const COMPLETER_INTERVAL_MS = 1_000;
/** How often the reaper deletes records past their cleanup time. idem's default. */
export const REAPER_INTERVAL_MS = 60_000;

/** What a shutdown did, for the log. */
export interface DrainReport {
  /** Requests still running when the drain began. */
  inFlight: number;
  /** Requests that arrived on kept-alive connections during the drain (answered, then closed). */
  lateRequests: number;
  /** Connections closed by force when the drain time ran out (0 when all finished in time). */
  forced: number;
  drainedMs: number;
}

/** A running example server. */
export interface RunningExample extends AsyncDisposable {
  /** The tRPC endpoint, e.g. `http://127.0.0.1:3000/trpc`. */
  url: string;
  database: AppDatabase;
  /**
   * The secret `/dev/faults` wants in `X-Idem-Dev-Secret`, made at start-up (with dev controls
   * on; null otherwise). The checkout page this process serves carries it.
   */
  devSecret: string | null;
  /**
   * Drains, then stops: stops accepting connections, lets in-flight requests finish (their
   * responses, and any request arriving on a kept-alive connection meanwhile, carry
   * `Connection: close`), closes idle connections, and after `drainMs` closes whatever is left;
   * then stops the workers and closes the database. Resolves with how it went.
   */
  close(drainMs?: number): Promise<DrainReport>;
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
  const processor = new StandInProcessor(
    database.db,
    config.processorLatencyMs,
    log,
    config.processorMode,
  );
  const { router, idem } = createAppRouter({
    db: database.db,
    store: database.store,
    processor,
    faults,
    log,
    leaseMs: config.leaseMs,
    keySecret: config.keySecret,
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

  // A new secret at every start: whoever drives the switches read it from this process's output,
  // or from the page this process serves on its own origin.
  const devSecret = config.devControls ? newDevSecret() : null;
  // In front of tRPC, in order: CORS for the origins allowed (the checkout page on another port),
  // the checkout page (GET / and /checkout.js), the fault switches (only with dev controls on),
  // then the fault injection.
  const middlewares = [
    ...(config.corsOrigins.length > 0
      ? [
          idemCors({
            origins: config.corsOrigins,
            allowHeaders: ['Authorization', ...(devSecret ? [DEV_SECRET_HEADER] : [])],
          }).middleware,
        ]
      : []),
    checkoutPage({ apiUrl: '/trpc', ...(devSecret ? { devSecret } : {}) }),
    ...(devSecret
      ? [
          faultControl({
            secret: devSecret,
            faults,
            processor,
            normalLatencyMs: config.processorLatencyMs,
            slowLatencyMs: slowProcessorLatencyMs(config.leaseMs),
            log,
          }),
        ]
      : []),
    faults.middleware,
  ];
  const server = createHTTPServer({
    router,
    basePath: '/trpc/',
    createContext: appContext(config.tokenSecret),
    responseMeta: idemResponseMeta,
    middleware: chain(middlewares),
    // Counted while the body streams in: the request fails with 413 once it passes the limit.
    maxBodySize: config.maxBodyBytes,
  });
  const drain = trackRequests(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, '127.0.0.1', resolve);
  });
  completer.start();
  reaper.start();
  const { port } = server.address() as AddressInfo;

  let closing: Promise<DrainReport> | undefined;
  const close = (drainMs = config.drainMs) =>
    (closing ??= (async () => {
      const report = await drain(drainMs);
      await Promise.all([completer.stop(), reaper.stop()]);
      await database.close();
      return report;
    })());
  return {
    url: `http://127.0.0.1:${port}/trpc`,
    database,
    devSecret,
    close,
    [Symbol.asyncDispose]: async () => {
      await close();
    },
  };
}

/**
 * The processor's latency behind the page's "slow processor" switch: 80 % of the charge's time
 * limit (half the lease), so a charge is slow enough to reload the page meanwhile and still ends
 * inside its limit. 1 200 ms with the default 3 s lease.
 */
export function slowProcessorLatencyMs(leaseMs: number): number {
  return Math.round((leaseMs / 2) * 0.8);
}

type Middleware = (req: IncomingMessage, res: ServerResponse, next: () => void) => void;

/** Connect-style middlewares run in order; each calls `next` to pass the request on. */
function chain(middlewares: readonly Middleware[]): Middleware {
  return (req, res, next) => {
    const run = (index: number): void => {
      const middleware = middlewares[index];
      if (!middleware) return next();
      middleware(req, res, () => run(index + 1));
    };
    run(0);
  };
}

/**
 * Keeps count of the responses in flight, and returns the drain: from its start, every response
 * not yet sent (and every request that still arrives on a kept-alive connection) goes out with
 * `Connection: close`, so node closes its connection once it is sent; idle connections close at
 * once; the listener is closed, so new connections are refused. After `drainMs` the connections
 * left are closed by force.
 */
function trackRequests(server: Server): (drainMs: number) => Promise<DrainReport> {
  const inFlight = new Set<ServerResponse>();
  let draining = false;
  let lateRequests = 0;
  // First in line, before tRPC's handler: nothing has been written yet.
  server.prependListener('request', (_req, res: ServerResponse) => {
    if (draining) {
      lateRequests++;
      res.setHeader('Connection', 'close');
    }
    inFlight.add(res);
    res.once('close', () => inFlight.delete(res));
  });
  return async (drainMs) => {
    const started = performance.now();
    draining = true;
    const running = inFlight.size;
    for (const res of inFlight) {
      if (!res.headersSent) res.setHeader('Connection', 'close');
    }
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = await Promise.race([
      closed.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), drainMs))),
    ]);
    clearTimeout(timer);
    let forced = 0;
    if (timedOut) {
      forced = inFlight.size;
      server.closeAllConnections();
      await closed;
    }
    return {
      inFlight: running,
      lateRequests,
      forced,
      drainedMs: Math.round(performance.now() - started),
    };
  };
}
