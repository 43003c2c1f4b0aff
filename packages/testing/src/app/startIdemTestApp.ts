import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { idemContext, idemResponseMeta } from '@idem/server';
import type { AnyTRPCRouter } from '@trpc/server';
import { createHTTPServer } from '@trpc/server/adapters/standalone';
import { hookedStore, runHooks, type StoreHooks } from './arrivalBarrier.js';
import type { IdemTestApp, IdemTestAppInstance } from './defineIdemTestApp.js';
import {
  CALLER_HEADER,
  postMutation,
  requestHeaders,
  type IdemTestAnswer,
  type IdemTestRequestOptions,
} from './IdemTestAnswer.js';
import {
  openIdemTestDatabase,
  type IdemTestConnection,
  type IdemTestDatabase,
  type IdemTestDatabaseOptions,
  type IdemTestDb,
  type IdemTestStore,
} from './IdemTestDatabase.js';
import type { MutationInput, MutationPath } from './mutationPaths.js';

/** Which server a store wrapper is for. */
export interface IdemTestServerInfo {
  /** The server's index in the run: 0, 1, ... */
  index: number;
  /** Milliseconds its store clock runs ahead of the database's. */
  clockShiftMs: number;
}

/** Options of {@link startIdemTestApp}: where it runs, how many servers, and their stores. */
export interface StartIdemTestAppOptions extends IdemTestDatabaseOptions {
  /**
   * How many servers to start. On PostgreSQL each has its own pool and store, as separate
   * processes would; on PGlite they share the one database (which runs one transaction at a
   * time). Defaults to 2.
   */
  servers?: number;
  /**
   * Run on this database instead of opening one (the run then leaves it open when it closes).
   * Defaults to a database opened from {@link databaseUrl} (or PGlite) and closed with the run.
   */
  database?: IdemTestDatabase;
  /**
   * Milliseconds a request may take before it fails with `IdemTestTimeoutError`; a gate reports
   * it as a procedure that never answered. Defaults to 10 000.
   */
  requestTimeoutMs?: number;
  /**
   * Wraps each server's store before your factory gets it: to count or interrupt the store's
   * calls (crash points). Defaults to none.
   */
  wrapStore?(store: IdemTestStore, server: IdemTestServerInfo): IdemTestStore;
}

/** One server of a run: your router over real HTTP on a loopback port. */
export interface IdemTestServer<TRouter extends AnyTRPCRouter = AnyTRPCRouter> {
  /** The server's number in the run, from 0, never reused. */
  readonly index: number;
  /** `http://127.0.0.1:<port>`: the router is mounted at the root (`POST /orders.create`). */
  readonly url: string;
  /** Milliseconds this server's store clock runs ahead of the database's. */
  readonly clockShiftMs: number;
  /** This server's database connection (see {@link IdemTestConnection}). */
  readonly db: IdemTestDb;
  /** The store your factory got for this server (wrapped, if `wrapStore` was given). */
  readonly store: IdemTestStore;
  /** The router your factory built for this server. */
  readonly router: TRouter;
  /** POSTs a mutation to this server and returns the wire answer. */
  request<TPath extends MutationPath<TRouter>>(
    path: TPath,
    input: MutationInput<TRouter, TPath>,
    options?: IdemTestRequestOptions,
  ): Promise<IdemTestAnswer>;
  /** Stops the server, calls your `close`, ends its connection, and takes it out of the run. */
  close(): Promise<void>;
}

/** A running app: its database and servers. Close it (or `await using`) when done. */
export interface IdemTestRun<
  TRouter extends AnyTRPCRouter = AnyTRPCRouter,
> extends AsyncDisposable {
  readonly app: IdemTestApp<TRouter>;
  readonly database: IdemTestDatabase;
  /** The servers up: those started with the run, then any {@link addServer} started; a closed one leaves. */
  readonly servers: readonly IdemTestServer<TRouter>[];
  /** Milliseconds a request may take (see `requestTimeoutMs`). */
  readonly requestTimeoutMs: number;
  /**
   * Starts one more server on the same database, e.g. with its store clock moved forward (a
   * server that arrives later); closed with the run. Its `wrapStore` wraps the store after the
   * run's own `wrapStore`, if any.
   */
  addServer(options?: {
    clockShiftMs?: number;
    wrapStore?: StartIdemTestAppOptions['wrapStore'];
  }): Promise<IdemTestServer<TRouter>>;
  /** Closes every server, then the database (unless it was given in the options). */
  close(): Promise<void>;
}

/**
 * Starts your app: opens the database (in-memory PGlite, or PostgreSQL at `databaseUrl`), runs
 * idem's migrations and your `setup`, then serves your router on `servers` HTTP servers through
 * tRPC's standalone adapter, with idem's request context and response headers, so every answer
 * is the real wire answer.
 *
 * @example
 * await using run = await startIdemTestApp(app, { databaseUrl: process.env.DATABASE_URL });
 * const answer = await run.servers[0]!.request('orders.create', input, { key: 'k1', caller: 'alice' });
 */
export async function startIdemTestApp<TRouter extends AnyTRPCRouter>(
  app: IdemTestApp<TRouter>,
  options: StartIdemTestAppOptions = {},
): Promise<IdemTestRun<TRouter>> {
  const servers = options.servers ?? 2;
  if (!Number.isInteger(servers) || servers < 1) {
    throw new RangeError(
      `@idem/testing: servers must be a whole number of at least 1, got ${servers}`,
    );
  }
  const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  const owned = options.database === undefined;
  const database = options.database ?? (await openIdemTestDatabase(options));
  const started: IdemTestServer<TRouter>[] = [];
  let nextIndex = 0;
  const hooks: StoreHooks = { barrier: null };
  let closed: Promise<void> | null = null;
  const close = () =>
    (closed ??= (async () => {
      const results = await Promise.allSettled([...started].map((server) => server.close()));
      if (owned) await database.close();
      const failed = results.find((result) => result.status === 'rejected');
      if (failed) throw failed.reason;
    })());
  const addServer = async (
    extra: { clockShiftMs?: number; wrapStore?: StartIdemTestAppOptions['wrapStore'] } = {},
  ) => {
    const server = await startServer(app, database, {
      index: nextIndex++,
      clockShiftMs: extra.clockShiftMs ?? 0,
      requestTimeoutMs,
      wrapStore: composeWrappers(options.wrapStore, extra.wrapStore),
      hooks,
    });
    const stop = server.close;
    // A closed server leaves the run: the next gate spreads its requests over those still up.
    server.close = () => {
      const at = started.indexOf(server);
      if (at >= 0) started.splice(at, 1);
      return stop();
    };
    started.push(server);
    return server;
  };
  try {
    await app.definition.setup?.(database.db, { kind: database.kind });
    for (let index = 0; index < servers; index++) await addServer();
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
  const run: IdemTestRun<TRouter> = {
    app,
    database,
    servers: started,
    requestTimeoutMs,
    addServer,
    close,
    [Symbol.asyncDispose]: close,
  };
  runHooks.set(run, hooks);
  return run;
}

async function startServer<TRouter extends AnyTRPCRouter>(
  app: IdemTestApp<TRouter>,
  database: IdemTestDatabase,
  options: {
    index: number;
    clockShiftMs: number;
    requestTimeoutMs: number;
    wrapStore: StartIdemTestAppOptions['wrapStore'];
    hooks: StoreHooks;
  },
): Promise<IdemTestServer<TRouter>> {
  const { index, clockShiftMs, requestTimeoutMs } = options;
  const connection: IdemTestConnection = await database.connect({ clockShiftMs });
  let instance: IdemTestAppInstance<TRouter> | undefined;
  let http: Server | undefined;
  const stop = async () => {
    if (http) {
      const server = http;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    }
    try {
      await instance?.close?.();
    } finally {
      await connection.close();
    }
  };
  try {
    const store = hookedStore(
      options.wrapStore
        ? options.wrapStore(connection.store, { index, clockShiftMs })
        : connection.store,
      options.hooks,
    );
    instance = await app.definition.create({
      db: connection.db,
      store,
      server: index,
      clockShiftMs,
    });
    if (!instance || typeof instance.createContext !== 'function' || !instance.router) {
      throw new TypeError(
        '@idem/testing: your factory must return { router, createContext }: createContext({ caller, req, res, info }) builds your context for a caller',
      );
    }
    const built = instance;
    http = createHTTPServer({
      router: built.router,
      createContext: async (adapter) => {
        const raw = adapter.req.headers[CALLER_HEADER];
        const caller = typeof raw === 'string' ? decodeURIComponent(raw) : null;
        const own = await built.createContext({ ...adapter, caller });
        return { ...idemContext(adapter), ...own };
      },
      responseMeta: idemResponseMeta,
    } as Parameters<typeof createHTTPServer<TRouter>>[0]);
    const listening = http;
    await new Promise<void>((resolve, reject) => {
      listening.once('error', reject);
      listening.listen(0, '127.0.0.1', () => resolve());
    });
    const { port } = listening.address() as AddressInfo;
    const url = `http://127.0.0.1:${port}`;
    const { callerHeaders, transformer } = app.definition;
    let closing: Promise<void> | null = null;
    return {
      index,
      url,
      clockShiftMs,
      db: connection.db,
      store,
      router: built.router,
      request: (path, input, requestOptions = {}) =>
        postMutation(
          { index, url },
          path,
          JSON.stringify(transformer ? transformer.serialize(input) : input) ?? '',
          requestHeaders(requestOptions, callerHeaders),
          requestOptions.timeoutMs ?? requestTimeoutMs,
        ),
      close: () => (closing ??= stop()),
    };
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
}

/** The run's wrapper, then the server's. */
function composeWrappers(
  runWrap: StartIdemTestAppOptions['wrapStore'],
  serverWrap: StartIdemTestAppOptions['wrapStore'],
): StartIdemTestAppOptions['wrapStore'] {
  if (!runWrap || !serverWrap) return serverWrap ?? runWrap;
  return (store, server) => serverWrap(runWrap(store, server), server);
}
