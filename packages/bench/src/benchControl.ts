import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RecoveryStore } from '@idem/contract';
import { createReaper, type Reaper } from '@idem/server';
import { sql, type SQL } from 'drizzle-orm';
import type { HandlerInvocations } from './benchApp.js';
import type { CpuProfiler } from './cpuProfiler.js';
import { seedRecords, type SeedPlan } from './seedRecords.js';

/** Statements this server process sent, counted by its Drizzle logger (and driver hook). */
export interface StatementCounter {
  /** Statements Drizzle ran: idem's and the handlers'. BEGIN and COMMIT are not among them. */
  statements: number;
  /** The same, by first SQL keyword (`INSERT`, `UPDATE`, `WITH`, ...). */
  byVerb: Record<string, number>;
  /** Every statement postgres.js sent, BEGIN and COMMIT included; null when not counted. */
  wire: number | null;
  /**
   * Writes to the database sockets: round trips, as queries postgres.js issues in the same tick
   * go out in one write (pipelined). Null when not counted (COUNT_WIRE unset, or PGlite).
   */
  roundTrips: number | null;
  /** Times each measured handler was invoked (started), committed or not. */
  invocations: HandlerInvocations;
  /** Requests answered 503 by the outage path. */
  outageHits: number;
  /** Requests handed to the measured router (everything but `/__bench/` and the outage path). */
  requests: number;
}

export function newCounter(countWire: boolean): StatementCounter {
  return {
    statements: 0,
    byVerb: {},
    wire: countWire ? 0 : null,
    roundTrips: countWire ? 0 : null,
    invocations: { plain: 0, idem: 0 },
    outageHits: 0,
    requests: 0,
  };
}

/** What the reaper did between `/reaper/start` and `/reaper/stop`. */
export interface ReaperRun {
  deleted: number;
  runs: number;
  errors: string[];
  /** `Date.now()` of the start, and of the end of the run that found nothing left (or of stop). */
  startedAt: number;
  endedAt: number | null;
  drained: boolean;
}

interface ControlDeps {
  db: { execute(query: SQL): Promise<unknown> };
  store: RecoveryStore<unknown>;
  counter: StatementCounter;
  /** The server's CPU profiler, when it was started with `BENCH_CPU_PROFILE`. */
  profiler: CpuProfiler | null;
  info: Record<string, unknown>;
}

/**
 * The bench's own endpoints under `/__bench/` (loopback only, never part of the measured
 * router): counters, table resets, bulk seeding and the reaper, so that the orchestrator drives
 * PGlite (which lives inside this process) and PostgreSQL the same way.
 */
export function createBenchControl({ db, store, counter, profiler, info }: ControlDeps) {
  let reaper: Reaper | null = null;
  let run: ReaperRun | null = null;
  const rows = async (query: SQL) => {
    const result = (await db.execute(query)) as { rows?: unknown[] } | unknown[];
    return (Array.isArray(result) ? result : (result.rows ?? [])) as Record<string, unknown>[];
  };

  const profiling = () => {
    if (!profiler) throw new Error('start the bench server with BENCH_CPU_PROFILE=<file>');
    return profiler;
  };

  const routes: Record<string, (body: any) => Promise<unknown>> = {
    'GET /__bench/info': async () => info,
    'GET /__bench/stats': async () => counter,
    'POST /__bench/counters/reset': async () => resetCounters(counter),
    /** Restarts the CPU profiler (discarding what it sampled so far) and resets the counters. */
    'POST /__bench/profile/start': async () => {
      await profiling().start();
      return resetCounters(counter);
    },
    /** Writes the profile since `profile/start` (to `body.file`, if given); returns the counters. */
    'POST /__bench/profile/stop': async (body: { file?: string }) => {
      const { file } = await profiling().stop(body.file);
      return { file, counter };
    },
    'POST /__bench/reset': async () => {
      await db.execute(sql`TRUNCATE bench_orders, idem_records RESTART IDENTITY`);
      return resetCounters(counter);
    },
    'POST /__bench/orders/count': async (body: { sku: string }) => {
      const [row] = await rows(
        sql`select count(*)::int as n from bench_orders where sku = ${body.sku}`,
      );
      return { count: Number(row!.n) };
    },
    /** Where PostgreSQL's WAL ends now (`pg_current_wal_lsn`); null on PGlite. */
    'GET /__bench/wal': async () => {
      if (info.kind !== 'postgres') return { lsn: null };
      const [row] = await rows(sql`select pg_current_wal_lsn()::text as lsn`);
      return { lsn: String(row!.lsn) };
    },
    'GET /__bench/records/count': async () => {
      const [row] = await rows(sql`select count(*)::int as n from idem_records`);
      return { count: Number(row!.n) };
    },
    'POST /__bench/seed': async (plan: SeedPlan) => {
      const started = performance.now();
      await db.execute(seedRecords(plan));
      const insertMs = performance.now() - started;
      await db.execute(sql`VACUUM ANALYZE idem_records`);
      return { insertMs, vacuumMs: performance.now() - started - insertMs };
    },
    'POST /__bench/reaper/start': async () => {
      if (typeof (store as Partial<RecoveryStore>).reap !== 'function') {
        throw new Error('the store has no reap() yet');
      }
      const current: ReaperRun = {
        deleted: 0,
        runs: 0,
        errors: [],
        startedAt: Date.now(),
        endedAt: null,
        drained: false,
      };
      run = current;
      const worker = createReaper({
        store,
        intervalMs: 0,
        onReport: (report) => {
          current.runs += 1;
          current.deleted += report.deleted;
          if (report.deleted === 0 && !current.drained) {
            current.drained = true;
            current.endedAt = Date.now();
            void worker.stop();
          }
        },
        onError: (error) => current.errors.push(String(error)),
      });
      reaper = worker;
      worker.start();
      return { startedAt: current.startedAt };
    },
    'POST /__bench/reaper/stop': async () => {
      await reaper?.stop();
      reaper = null;
      if (run && run.endedAt === null) run.endedAt = Date.now();
      return run;
    },
  };

  return async (req: IncomingMessage, res: ServerResponse) => {
    const route = routes[`${req.method} ${req.url?.split('?')[0]}`];
    try {
      if (!route) throw new Error(`no bench route ${req.method} ${req.url}`);
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const text = Buffer.concat(chunks).toString('utf8');
      const result = await route(text ? JSON.parse(text) : {});
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(result ?? null));
    } catch (error) {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: error instanceof Error ? error.message : String(error) }));
    }
  };
}

function resetCounters(counter: StatementCounter): StatementCounter {
  counter.statements = 0;
  counter.byVerb = {};
  if (counter.wire !== null) counter.wire = 0;
  if (counter.roundTrips !== null) counter.roundTrips = 0;
  counter.invocations.plain = 0;
  counter.invocations.idem = 0;
  counter.outageHits = 0;
  counter.requests = 0;
  return counter;
}
