import type { StatementCounter } from '../benchControl.js';
import { FIRST_ATTEMPT, RETRY_ATTEMPT, type ClosedLoopResult, type KeyPlan } from '../jobs.js';
import { startServer, type BenchServer } from '../processes.js';
import { ACCOUNT, INPUT, keyPrefix, type SectionContext } from './SectionContext.js';

/** Statements of one kind of request, counted over `requests` sequential requests. */
export interface StatementCount {
  /** Drizzle statements per request (BEGIN and COMMIT not included). */
  perRequest: number;
  byVerb: Record<string, number>;
  /** Every statement postgres.js sent per request, BEGIN and COMMIT included; null on PGlite. */
  wirePerRequest: number | null;
  /**
   * Round trips per request: writes to the database socket, queries sent together in one write
   * (pipelined) counting once; null on PGlite (in-process, no round trips).
   */
  roundTripsPerRequest: number | null;
}

export interface StatementsResult {
  requests: number;
  plain: StatementCount;
  /** A fresh key as idem's client sends it (`Idempotency-Attempt: 1`). */
  fresh: StatementCount;
  /** A fresh key from a client that sends no `Idempotency-Attempt`. */
  freshRaw: StatementCount;
  /**
   * Whether the server read the key before the handler for a first attempt too: `fresh` sent as
   * many statements as `freshRaw` (which always reads), so the header saved nothing.
   */
  firstAttemptReadsKey: boolean;
  /** The same key again, as a retry (`Idempotency-Attempt: 2`). */
  replay: StatementCount;
  /** fresh - plain: what idem adds to a first execution. */
  extraPerFresh: number;
  extraPerFreshWire: number | null;
  /** fresh - plain round trips; null on PGlite. */
  extraRoundTripsPerFresh: number | null;
}

/**
 * Counts, never estimates, the SQL statements of four kinds of request: the baseline mutation,
 * a fresh idempotent one as idem's client sends it (first attempt) and as a client without the
 * attempt header sends it, and a replay of it (a retry). The server's Drizzle logger counts; on
 * PostgreSQL a server process of its own also counts through the postgres.js `debug` hook, BEGIN
 * and COMMIT included (the hook captures a stack per query, which keeps it out of the timed
 * runs), and counts the writes to its database sockets: the round trips (see `benchServer.ts`).
 * One connection, one request at a time, after a warm-up, so the counters see nothing else.
 */
export async function measureStatements(ctx: SectionContext): Promise<StatementsResult> {
  if (!ctx.database) return countStatements(ctx, ctx.server);
  await using server = await startServer({ ...ctx.serverEnv, COUNT_WIRE: '1', BENCH_SETUP: '0' });
  return await countStatements(ctx, server);
}

async function countStatements(
  ctx: SectionContext,
  server: BenchServer,
): Promise<StatementsResult> {
  const n = ctx.profile.statementRequests;
  const run = (path: string, keys: KeyPlan, requests: number) =>
    ctx.worker.run(
      {
        kind: 'closed-loop',
        url: server.url,
        path,
        account: ACCOUNT,
        input: INPUT,
        keys,
        concurrency: 1,
        warmupMs: 0,
        requests,
      },
      120_000,
    );
  const count = async (
    path: string,
    keys: KeyPlan,
    check: (r: ClosedLoopResult) => boolean,
  ): Promise<StatementCount> => {
    await server.post('counters/reset');
    const result = await run(path, keys, n);
    if (!check(result)) {
      throw new Error(
        `statement count of ${path}: unexpected answers ${JSON.stringify(result.statuses)}`,
      );
    }
    const counter = await server.get<StatementCounter>('stats');
    return {
      perRequest: counter.statements / n,
      byVerb: Object.fromEntries(Object.entries(counter.byVerb).map(([verb, c]) => [verb, c / n])),
      wirePerRequest: counter.wire === null ? null : counter.wire / n,
      roundTripsPerRequest: counter.roundTrips === null ? null : counter.roundTrips / n,
    };
  };
  const ok = (r: ClosedLoopResult) => r.statuses['200'] === n;

  // Warm-up: connections opened, types fetched, statements prepared.
  const warm = keyPrefix('warm');
  await run('plain.create', { kind: 'fresh', prefix: warm }, 10);
  await run('idem.create', { kind: 'fresh', prefix: warm, attempt: FIRST_ATTEMPT }, 10);
  await run('idem.create', { kind: 'cycle', prefix: warm, count: 10, attempt: RETRY_ATTEMPT }, 10);
  await run('idem.create', { kind: 'fresh', prefix: keyPrefix('warm-raw') }, 10);

  const prefix = keyPrefix('count');
  const plain = await count('plain.create', { kind: 'fresh', prefix: keyPrefix('plain') }, ok);
  const fresh = await count(
    'idem.create',
    { kind: 'fresh', prefix, attempt: FIRST_ATTEMPT },
    (r) => ok(r) && r.replayed === 0,
  );
  const freshRaw = await count(
    'idem.create',
    { kind: 'fresh', prefix: keyPrefix('raw') },
    (r) => ok(r) && r.replayed === 0,
  );
  const replay = await count(
    'idem.create',
    { kind: 'cycle', prefix, count: n, attempt: RETRY_ATTEMPT },
    (r) => ok(r) && r.replayed === n,
  );
  return {
    requests: n,
    plain,
    fresh,
    freshRaw,
    firstAttemptReadsKey: fresh.perRequest >= freshRaw.perRequest,
    replay,
    extraPerFresh: fresh.perRequest - plain.perRequest,
    extraPerFreshWire:
      fresh.wirePerRequest === null ? null : fresh.wirePerRequest - plain.wirePerRequest!,
    extraRoundTripsPerFresh:
      fresh.roundTripsPerRequest === null
        ? null
        : fresh.roundTripsPerRequest - plain.roundTripsPerRequest!,
  };
}
