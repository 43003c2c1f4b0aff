/**
 * A bench server process: the bench router over node http on a free loopback port, with idem's
 * store on PostgreSQL (`BENCH_DB=postgres`, `DATABASE_URL`, `POOL_MAX` connections) or on an
 * in-memory PGlite of its own (`BENCH_DB=pglite`). `BENCH_SETUP=1` migrates and creates the
 * business table first. `COUNT_WIRE=1` (PostgreSQL) also counts every statement postgres.js
 * sends, BEGIN and COMMIT included, through its `debug` hook, which captures a stack trace per
 * query: use it for counting runs only, never timed ones. With it, each connection's socket is
 * wrapped to count its writes: the round trips (see `countingSocket`). `BENCH_CPU_PROFILE=<file>`
 * profiles the process's CPU from its start (V8 sampler, every `BENCH_CPU_PROFILE_INTERVAL_US` µs,
 * default 1000) and writes the profile (open it in Chrome DevTools) when it stops;
 * `/__bench/profile/start` and `/__bench/profile/stop` restart it and write it on demand, to
 * profile a window only. Prints `listening <url>`.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { connect as connectSocket, type AddressInfo, type Socket } from 'node:net';
import { PGlite } from '@electric-sql/pglite';
import type { RecoveryStore } from '@idem/contract';
import { idemContext, idemResponseMeta } from '@idem/server';
import { createPgliteStore, migrate as migratePglite } from '@idem/store-drizzle/pglite';
import {
  createPostgresJsStore,
  migrate as migratePostgresJs,
} from '@idem/store-drizzle/postgres-js';
import { createHTTPHandler } from '@trpc/server/adapters/standalone';
import { sql, type Logger } from 'drizzle-orm';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePostgresJs } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { createBenchApp, createBenchTables, OUTAGE_PATH } from './benchApp.js';
import { createBenchControl, newCounter } from './benchControl.js';
import { createCpuProfiler } from './cpuProfiler.js';

const kind = process.env.BENCH_DB === 'postgres' ? 'postgres' : 'pglite';
const poolMax = Number(process.env.POOL_MAX ?? 10);
const counter = newCounter(kind === 'postgres' && process.env.COUNT_WIRE === '1');
const profiler = process.env.BENCH_CPU_PROFILE
  ? createCpuProfiler(
      process.env.BENCH_CPU_PROFILE,
      process.env.BENCH_CPU_PROFILE_INTERVAL_US
        ? Number(process.env.BENCH_CPU_PROFILE_INTERVAL_US)
        : undefined,
    )
  : null;
await profiler?.start();
const logger: Logger = {
  logQuery(query) {
    counter.statements += 1;
    const verb = /^\s*(\w+)/.exec(query)?.[1]?.toUpperCase() ?? '?';
    counter.byVerb[verb] = (counter.byVerb[verb] ?? 0) + 1;
  },
};

let close: () => Promise<void>;
let db;
let store;
if (kind === 'postgres') {
  const client = postgres(process.env.DATABASE_URL!, {
    max: poolMax,
    onnotice: () => {},
    ...(counter.wire !== null
      ? {
          debug: () => void (counter.wire! += 1),
          socket: (options: SocketOptions) => countingSocket(options),
        }
      : {}),
  } as postgres.Options<{}>);
  const pg = drizzlePostgresJs(client, { logger });
  if (process.env.BENCH_SETUP === '1') await migratePostgresJs(pg);
  db = pg;
  store = createPostgresJsStore(pg);
  close = () => client.end({ timeout: 2 });
} else {
  const client = new PGlite();
  const lite = drizzlePglite(client, { logger });
  await migratePglite(lite);
  db = lite;
  store = createPgliteStore(lite);
  close = () => client.close();
}
if (process.env.BENCH_SETUP === '1' || kind === 'pglite') await db.execute(createBenchTables);
const versionRows = (await db.execute(sql`select version() as version`)) as unknown as
  { version: string }[] | { rows: { version: string }[] };
const databaseVersion = (Array.isArray(versionRows) ? versionRows : versionRows.rows)[0]!.version;
counter.statements = 0;
counter.byVerb = {};

const trpc = createHTTPHandler({
  router: createBenchApp(db, store, counter.invocations),
  createContext: ({ req }) => ({ ...idemContext(req), account: accountOf(req.headers) }),
  responseMeta: idemResponseMeta,
});
const control = createBenchControl({
  db,
  store: store as unknown as RecoveryStore<unknown>,
  counter,
  profiler,
  info: {
    kind,
    databaseVersion,
    poolMax: kind === 'postgres' ? poolMax : 1,
    pid: process.pid,
    // Where idem's server package was loaded from: its build or its sources (--from).
    idemServer: import.meta.resolve('@idem/server'),
  },
});
const outageBody = JSON.stringify({
  error: {
    message: 'bench outage',
    code: -32603,
    data: { code: 'SERVICE_UNAVAILABLE', httpStatus: 503, path: OUTAGE_PATH },
  },
});

/** What postgres.js passes to its (untyped) `socket` option: its parsed connection options. */
interface SocketOptions {
  host: string[];
  port: number[];
  path: string | false;
  ssl: unknown;
}

/**
 * A connection to PostgreSQL whose writes are counted as round trips. postgres.js buffers the
 * messages of the queries issued in one tick and sends them in one `write` (on the next
 * setImmediate, or at once past 1 KiB), so queries sent together (pipelined, a statement with
 * its COMMIT) are one write, and every write but the connection's start-up is the client sending
 * work and then waiting for the answer: the number of writes during a request is an honest proxy
 * for its round trips. postgres.js takes a socket from this option as already connected, so it
 * resolves on `connect`.
 */
function countingSocket(options: SocketOptions): Promise<Socket> {
  if (options.ssl) throw new Error('COUNT_WIRE=1 counts plain TCP sockets only: drop ssl');
  const socket = options.path
    ? connectSocket(options.path)
    : connectSocket(options.port[0]!, options.host[0]!);
  const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
  socket.write = ((...args: unknown[]) => {
    counter.roundTrips! += 1;
    return write(...args);
  }) as Socket['write'];
  return new Promise((resolve, reject) => {
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

const server = createServer((req, res) => {
  if (req.url?.startsWith('/__bench/')) return void control(req, res);
  if (req.url?.startsWith(`/${OUTAGE_PATH}`)) {
    counter.outageHits += 1;
    req.resume();
    res.writeHead(503, { 'content-type': 'application/json' });
    return void res.end(outageBody);
  }
  counter.requests += 1;
  trpc(req, res);
});
// Idle keep-alive sockets of the load generator must survive the pauses between runs.
server.keepAliveTimeout = 120_000;
server.headersTimeout = 121_000;
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', 1024, resolve));
const { port } = server.address() as AddressInfo;
process.stdout.write(`listening http://127.0.0.1:${port}\n`);

process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close();
  void Promise.allSettled([close(), profiler?.running && profiler.stop()]).finally(() =>
    process.exit(0),
  );
});

function accountOf(headers: IncomingHttpHeaders): string | null {
  const match = /^Bearer (acct_[A-Za-z0-9_-]+)$/.exec(headers.authorization ?? '');
  return match?.[1] ?? null;
}
