import { fileURLToPath } from 'node:url';
import { DEFAULT_TOKEN_SECRET } from './createContext.js';
import { CRASH_POINTS, type CrashPoint } from './Faults.js';
import type { ProcessorMode } from './StandInProcessor.js';

const PROCESSOR_MODES = ['deduplicating', 'lookup-only'] as const satisfies ProcessorMode[];

/** How the example server runs; read from the environment by {@link readConfig}. */
export interface ExampleConfig {
  /** `PORT`: where to listen on 127.0.0.1. Defaults to 3000; 0 picks a free port. */
  port: number;
  /** `DATABASE_URL`: PostgreSQL. When unset, embedded PGlite in {@link dataDir}. */
  databaseUrl: string | null;
  /**
   * `IDEM_EXAMPLE_DATABASE_DRIVER`: the driver under PostgreSQL (with `DATABASE_URL`):
   * `postgres-js` (postgres.js and `@idem/store-drizzle/postgres-js`) or `pg` (a node-postgres
   * `Pool` and `@idem/store-drizzle/node-postgres`). Both run the same app, migrations and
   * settings. Defaults to `postgres-js`; PGlite ignores it.
   */
  databaseDriver: DatabaseDriver;
  /**
   * `IDEM_EXAMPLE_DATA_DIR`: PGlite's folder (`memory://` for a throwaway database). Defaults to
   * `apps/example/.data/pglite`.
   */
  dataDir: string;
  /**
   * `IDEM_EXAMPLE_LEASE_MS`: the lease of `payments.create` and of the completer. Defaults to
   * 3 000 ms, so that a crash demo recovers in seconds; idem's own default is 30 000 ms.
   */
  leaseMs: number;
  /** `IDEM_EXAMPLE_PROCESSOR_LATENCY_MS`: the stand-in processor's latency. Defaults to 200. */
  processorLatencyMs: number;
  /**
   * `IDEM_EXAMPLE_PROCESSOR`: `deduplicating` (the default: a repeated charge request for one
   * operation id returns the first charge) or `lookup-only` (every charge call makes a charge;
   * the processor can only be asked whether a charge exists): a double call shows as a double
   * charge.
   */
  processorMode: ProcessorMode;
  /** `IDEM_EXAMPLE_CRASH_AT`: SIGKILL the process there, once. Defaults to none. */
  crashAt: CrashPoint | null;
  /** `IDEM_EXAMPLE_DROP_RATE`: share (0..1) of fresh responses dropped after commit. Defaults to 0. */
  dropRate: number;
  /**
   * `IDEM_EXAMPLE_TOKEN_SECRET`: signs the demo bearer tokens (see `tokenFor`). Defaults to a
   * public demo secret: set your own before anyone else can reach the server.
   */
  tokenSecret: string;
  /**
   * `IDEM_EXAMPLE_KEY_SECRET`: idem's `keySecret`, which idempotency keys are hashed with (HMAC)
   * in the table and the logs; at least 32 characters (`openssl rand -hex 32`). Defaults to
   * {@link DEFAULT_KEY_SECRET}, a public demo secret: set your own before anyone else can reach
   * the server. Changing it turns live keys into new requests (see docs/server.md).
   */
  keySecret: string;
  /**
   * `IDEM_EXAMPLE_MAX_BODY_BYTES`: the largest request body; a larger one is refused with 413
   * while it streams in, never buffered whole. Defaults to 1 048 576 (1 MiB).
   */
  maxBodyBytes: number;
  /**
   * `IDEM_EXAMPLE_DRAIN_MS`: on SIGTERM or SIGINT, how long in-flight requests may take to finish
   * before their connections are closed and the process exits. Defaults to 10 000 ms.
   */
  drainMs: number;
  /**
   * `IDEM_EXAMPLE_DATABASE_POOLER`: what stands between the example and PostgreSQL. `auto` probes
   * at start-up (`detectTransactionPooler`) and turns prepared statements off when it finds a
   * transaction-mode pooler (PgBouncer's `pool_mode = transaction`), with a warning; `none`
   * probes and refuses to start behind such a pooler; `transaction` turns prepared statements
   * off without probing. Defaults to `auto`.
   */
  databasePooler: DatabasePooler;
  /**
   * `IDEM_EXAMPLE_DATABASE_CONNECT_TIMEOUT_MS`: how long opening a database connection may take
   * (a database host that does not answer). Bounds how long a request waits before its 503 in an
   * outage. Defaults to 1 000 ms.
   */
  databaseConnectTimeoutMs: number;
  /**
   * `IDEM_EXAMPLE_DATABASE_STATEMENT_TIMEOUT_MS`: PostgreSQL's `statement_timeout` for the
   * example's connections (0: none). Not sent through a transaction-mode pooler, which refuses it
   * as a start-up parameter: set it on the role there (`ALTER ROLE ... SET statement_timeout`).
   * Defaults to 5 000 ms.
   */
  databaseStatementTimeoutMs: number;
  /**
   * `IDEM_EXAMPLE_DEV_CONTROLS=1`: serve `GET`/`POST /dev/faults`, the fault switches of the
   * checkout page (drop the next response, a 503 burst, a slow processor), behind a secret made
   * and printed at start-up. Defaults to off: whoever reads the secret could break the server.
   * Any other value than `1` or `0` is refused.
   */
  devControls: boolean;
  /**
   * `IDEM_EXAMPLE_CORS_ORIGINS`: origins (comma-separated, e.g. `http://127.0.0.1:3001`) whose
   * pages may call the API, through idem's `idemCors`. Defaults to none (same origin only).
   */
  corsOrigins: string[];
}

/**
 * idem's key secret when `IDEM_EXAMPLE_KEY_SECRET` is unset. Public (it is in this file): set
 * your own before the example is reachable by anyone else.
 */
export const DEFAULT_KEY_SECRET = 'idem-example-demo-key-secret-not-for-production';

/** The values of `IDEM_EXAMPLE_DATABASE_POOLER`. */
export const DATABASE_POOLERS = ['auto', 'none', 'transaction'] as const;
export type DatabasePooler = (typeof DATABASE_POOLERS)[number];

/** The values of `IDEM_EXAMPLE_DATABASE_DRIVER`. */
export const DATABASE_DRIVERS = ['postgres-js', 'pg'] as const;
export type DatabaseDriver = (typeof DATABASE_DRIVERS)[number];

/** Reads the configuration; throws on a value it cannot use (better than a silent default). */
export function readConfig(env: NodeJS.ProcessEnv = process.env): ExampleConfig {
  const crashAt = env.IDEM_EXAMPLE_CRASH_AT || null;
  if (crashAt !== null && !(CRASH_POINTS as readonly string[]).includes(crashAt)) {
    throw new Error(
      `IDEM_EXAMPLE_CRASH_AT must be one of ${CRASH_POINTS.join(', ')}; got ${crashAt}`,
    );
  }
  const processorMode = env.IDEM_EXAMPLE_PROCESSOR || 'deduplicating';
  if (!(PROCESSOR_MODES as readonly string[]).includes(processorMode)) {
    throw new Error(
      `IDEM_EXAMPLE_PROCESSOR must be one of ${PROCESSOR_MODES.join(', ')}; got ${processorMode}`,
    );
  }
  return {
    port: integer(env, 'PORT', 3000, 0, 65_535),
    databaseUrl: env.DATABASE_URL || null,
    databaseDriver: driver(env),
    dataDir:
      env.IDEM_EXAMPLE_DATA_DIR || fileURLToPath(new URL('../.data/pglite', import.meta.url)),
    leaseMs: integer(env, 'IDEM_EXAMPLE_LEASE_MS', 3_000, 500, 600_000),
    processorLatencyMs: integer(env, 'IDEM_EXAMPLE_PROCESSOR_LATENCY_MS', 200, 0, 60_000),
    processorMode: processorMode as ProcessorMode,
    crashAt: crashAt as CrashPoint | null,
    dropRate: rate(env, 'IDEM_EXAMPLE_DROP_RATE'),
    tokenSecret: env.IDEM_EXAMPLE_TOKEN_SECRET || DEFAULT_TOKEN_SECRET,
    keySecret: env.IDEM_EXAMPLE_KEY_SECRET || DEFAULT_KEY_SECRET,
    maxBodyBytes: integer(env, 'IDEM_EXAMPLE_MAX_BODY_BYTES', 1_048_576, 1_024, 1_073_741_824),
    drainMs: integer(env, 'IDEM_EXAMPLE_DRAIN_MS', 10_000, 0, 600_000),
    databasePooler: pooler(env),
    databaseConnectTimeoutMs: integer(
      env,
      'IDEM_EXAMPLE_DATABASE_CONNECT_TIMEOUT_MS',
      1_000,
      100,
      60_000,
    ),
    databaseStatementTimeoutMs: integer(
      env,
      'IDEM_EXAMPLE_DATABASE_STATEMENT_TIMEOUT_MS',
      5_000,
      0,
      3_600_000,
    ),
    devControls: flag(env, 'IDEM_EXAMPLE_DEV_CONTROLS'),
    corsOrigins: (env.IDEM_EXAMPLE_CORS_ORIGINS ?? '')
      .split(',')
      .map((origin) => origin.trim())
      .filter(Boolean),
  };
}

function integer(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const text = env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${name} must be an integer from ${min} to ${max}; got ${text}`);
  }
  return value;
}

function rate(env: NodeJS.ProcessEnv, name: string): number {
  const text = env[name];
  if (text === undefined || text === '') return 0;
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0 || value > 1) {
    throw new Error(`${name} must be a number from 0 to 1; got ${text}`);
  }
  return value;
}

function pooler(env: NodeJS.ProcessEnv): DatabasePooler {
  const text = env.IDEM_EXAMPLE_DATABASE_POOLER || 'auto';
  if (!(DATABASE_POOLERS as readonly string[]).includes(text)) {
    throw new Error(
      `IDEM_EXAMPLE_DATABASE_POOLER must be one of ${DATABASE_POOLERS.join(', ')}; got ${text}`,
    );
  }
  return text as DatabasePooler;
}

function driver(env: NodeJS.ProcessEnv): DatabaseDriver {
  const text = env.IDEM_EXAMPLE_DATABASE_DRIVER || 'postgres-js';
  if (!(DATABASE_DRIVERS as readonly string[]).includes(text)) {
    throw new Error(
      `IDEM_EXAMPLE_DATABASE_DRIVER must be one of ${DATABASE_DRIVERS.join(', ')}; got ${text}`,
    );
  }
  return text as DatabaseDriver;
}

function flag(env: NodeJS.ProcessEnv, name: string): boolean {
  const text = env[name];
  if (text === undefined || text === '' || text === '0') return false;
  if (text === '1') return true;
  throw new Error(`${name} must be 1 (on) or 0 (off); got ${text}`);
}
