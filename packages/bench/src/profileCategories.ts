/**
 * Where a sampled function of the bench server belongs, by the URL of its source. idem's packages
 * run from their builds (`file:///.../packages/server/dist/...`, the default) or, with
 * `--from=source`, from their `.ts` files through tsx (`.../packages/server/src/...`); and
 * dependencies from `node_modules/.pnpm/<pkg>@<version>.../node_modules/<pkg>/...`: the package
 * is read from the path after the LAST `node_modules/` (the `.pnpm` folder's name also lists peer
 * dependencies, `..._postgres@3.4.9_...`, so a substring of it would lie).
 */

/**
 * The rows of the budget, in the order they are printed:
 * - `node http`: node's own JS and builtins when no package called them (http server and parser,
 *   sockets, streams, timers), and node's network I/O when tRPC or the bench app called it;
 * - `async machinery`: the microtask queue (`runMicrotasks`, `processTicksAndRejections`),
 *   async_hooks and AsyncLocalStorage, promise rejection tracking: what awaits cost;
 * - `tRPC`: @trpc/server, and the fetch machinery its standalone adapter uses (undici's Request
 *   and Response, web streams, abort signals it creates);
 * - `Zod`: zod;
 * - `idem request prep`: fingerprint, canonicalInput, keyHash, claimFingerprint, prepareJob,
 *   idemContext (by file name, in packages/server);
 * - `idem other`: the rest of packages/server, and packages/contract;
 * - `telemetry`: @opentelemetry/* and packages/server/src/telemetry;
 * - `store`: packages/store-drizzle;
 * - `SQL building`: drizzle-orm but its session files (sql.js, dialect.js, query builders, ...);
 * - `Drizzle session`: drizzle-orm's session.js, driver.js, logger, tracing (execute,
 *   transactions, row mapping);
 * - `driver`: postgres.js, or the JS side of @electric-sql/pglite;
 * - `PGlite database (wasm)`: PGlite's PostgreSQL itself (`wasm://` frames);
 * - `bench app`: packages/bench (the measured router, the context, the counting logger);
 * - `GC`, `V8 (program)` (native time V8 does not attribute to a function), `other`;
 * - `idle`: the main thread waiting for events (wall time, not CPU).
 */
export const CATEGORIES = [
  'node http',
  'async machinery',
  'tRPC',
  'Zod',
  'idem request prep',
  'idem other',
  'telemetry',
  'store',
  'SQL building',
  'Drizzle session',
  'driver',
  'PGlite database (wasm)',
  'bench app',
  'GC',
  'V8 (program)',
  'other',
  'idle',
] as const;
export type Category = (typeof CATEGORIES)[number];

const PREP_FILES =
  /\/(fingerprint|canonicalInput|keyHash|claimFingerprint|prepareJob|idemContext)\.[cm]?[jt]s$/;
const DRIZZLE_SESSION = /(^|\/)(session|driver|logger|tracing|tracing-utils)\.[cm]?js$/;

/** The microtask queue, async_hooks and AsyncLocalStorage, promise rejection tracking. */
const NODE_ASYNC =
  /^node:(async_hooks|internal\/(async_hooks|process\/(task_queues|promises)|async_local_storage\/\w+))$/;
/** What only tRPC's standalone adapter uses in the bench server: the fetch API's machinery. */
const NODE_FETCH = /^node:internal\/(webstreams\/\w+|deps\/undici\/undici)$/;
/** node's network I/O: the http server, sockets, streams (not web streams: tRPC's adapter). */
const NODE_IO = /^node:(_http_\w+|net|stream|internal\/(streams\/\w+|stream_base_commons|http))$/;

/**
 * The category of a profile node's own frame, or null when the frame is node's own JS
 * (`node:...`) or a V8 builtin (no URL, e.g. `JSON.parse`, `stringify`, a socket write): those
 * count for the caller, see {@link calleeCategory}.
 */
export function categoryOf(functionName: string, url: string): Category | null {
  switch (functionName) {
    case '(idle)':
      return 'idle';
    case '(garbage collector)':
      return 'GC';
    case '(program)':
      return 'V8 (program)';
    case '(root)':
      return null;
  }
  if (NODE_ASYNC.test(url) || (url === '' && functionName === 'runMicrotasks')) {
    return 'async machinery';
  }
  if (NODE_FETCH.test(url)) return 'tRPC';
  if (url === '' || url.startsWith('node:')) return null;
  if (url.startsWith('wasm://')) return 'PGlite database (wasm)';
  const path = decodeURIComponent(url.replace(/^file:\/\//, ''));
  const modules = path.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const inside = path.slice(modules + '/node_modules/'.length);
    const parts = inside.split('/');
    const pkg = inside.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
    const file = parts.slice(inside.startsWith('@') ? 2 : 1).join('/');
    if (pkg === '@trpc/server') return 'tRPC';
    if (pkg === 'zod') return 'Zod';
    if (pkg === 'postgres' || pkg === '@electric-sql/pglite') return 'driver';
    if (pkg.startsWith('@opentelemetry/')) return 'telemetry';
    if (pkg === 'drizzle-orm')
      return DRIZZLE_SESSION.test(file) ? 'Drizzle session' : 'SQL building';
    return 'other';
  }
  if (/\/packages\/server\/(src|dist)\/telemetry\//.test(path)) return 'telemetry';
  if (path.includes('/packages/server/') && PREP_FILES.test(path)) return 'idem request prep';
  if (path.includes('/packages/server/') || path.includes('/packages/contract/'))
    return 'idem other';
  if (path.includes('/packages/store-drizzle/')) return 'store';
  if (path.includes('/packages/bench/')) return 'bench app';
  return 'other';
}

/**
 * The category of a frame of node's own JS or a V8 builtin, called under `caller` (the category
 * of the nearest frame above it, null when there is none): the caller's, so that `JSON.parse` in
 * tRPC's adapter is tRPC's, an HMAC in idem's key hash is idem's and a socket write from
 * postgres.js is the driver's. But node's network I/O (http, net, streams) is `node http` when
 * the HTTP side (tRPC, the bench app, node itself) called it: writing the response is not tRPC's
 * own work, and it is the same with any framework.
 */
export function calleeCategory(url: string, caller: Category | null): Category {
  // What the microtask queue runs is not its own work, but the builtins it calls are.
  if (caller === 'async machinery' && url !== '') caller = null;
  const httpSide = caller === null || caller === 'tRPC' || caller === 'bench app';
  if (httpSide && NODE_IO.test(url)) return 'node http';
  return caller ?? 'node http';
}

/**
 * A readable location: the path inside its package or the workspace, and the 1-based line of
 * JavaScript files (a `.ts` file's line is tsx's output's, not the source's: left out).
 */
export function shortUrl(url: string, lineNumber: number): string {
  if (url === '') return '(builtin)';
  const path = decodeURIComponent(url.replace(/^file:\/\//, ''));
  const modules = path.lastIndexOf('/node_modules/');
  const packages = path.lastIndexOf('/packages/');
  const short =
    modules >= 0
      ? path.slice(modules + '/node_modules/'.length)
      : packages >= 0
        ? path.slice(packages + 1)
        : path;
  return /\.[cm]?ts$/.test(short) ? short : `${short}:${lineNumber + 1}`;
}
