import { setTimeout as sleep } from 'node:timers/promises';
import type { RecoveryStore, StuckReport } from '@idem/contract';
import type { Meter } from '@opentelemetry/api';
import { createIdemTelemetry } from '../telemetry/idemTelemetry.js';
import { checkedNumber, checkedTimerMs, MAX_TIMER_MS } from './checkedOptions.js';
import { runPeriodically, type PeriodicWorker } from './runPeriodically.js';

const WORKER = 'createReaper';

/** Options of {@link createReaper} (configured once per worker). */
export interface ReaperOptions {
  /** The store whose records are reaped. */
  store: RecoveryStore<unknown>;
  /** Rows deleted per statement, by primary key. Defaults to 500: short locks, little WAL at once. */
  batchSize?: number;
  /** Statements per run at most; the rest waits for the next run. Defaults to 20. */
  maxBatches?: number;
  /**
   * After each full batch, the reaper pauses for this many times as long as the batch took, so
   * that while it works through a backlog the database keeps serving the requests: PGlite has one
   * connection, and the foreground waits for every batch the reaper runs on it. Defaults to 1
   * (the reaper holds the database at most half the time). 0 runs the batches back to back.
   * `stop()` cuts a pause short.
   */
  pauseRatio?: number;
  /** How long past its lease (or since PENDING began) a record counts as stuck. Defaults to 300 000. */
  stuckAfterMs?: number;
  /** Milliseconds between runs when started. Defaults to 60 000. */
  intervalMs?: number;
  /** Receives each run's report: what was deleted and what was found stuck. Defaults to none. */
  onReport?(report: ReaperReport): void;
  onError?(error: unknown): void;
  /** The OpenTelemetry meter for reaped rows and stuck records. Defaults to `@idem/server`'s. */
  meter?: Meter;
}

/** What one reaper run did and found. */
export interface ReaperReport {
  deleted: number;
  stuck: StuckReport;
}

/**
 * The reaper worker. Its `stop()` stops scheduling, ends a pause in flight at once, and waits for
 * the run in flight to finish the batch it is in (the rest of that run's backlog waits for the
 * next start).
 */
export interface Reaper extends PeriodicWorker {
  /** One run: up to `maxBatches` batches, then the stuck report. */
  runOnce(): Promise<ReaperReport>;
}

/** @internal The clock the reaper paces its batches with: replaced in tests. */
export interface ReaperClock {
  now(): number;
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

const systemClock: ReaperClock = {
  now: () => performance.now(),
  sleep: (ms, signal) => sleep(ms, undefined, { signal }).catch(() => {}),
};

/**
 * Deletes terminal records past their cleanup time in bounded batches, paced so that a backlog
 * does not take the database from the requests, and reports what it found stuck. It never deletes
 * PENDING, IN_PROGRESS, OUTCOME_UNKNOWN or NEEDS_RECONCILIATION records. Safe to run on several
 * instances at once.
 */
export function createReaper(options: ReaperOptions): Reaper {
  return createPacedReaper(options, systemClock);
}

/** @internal {@link createReaper} on a given clock. */
export function createPacedReaper(options: ReaperOptions, clock: ReaperClock): Reaper {
  const batchSize = checkedNumber(WORKER, 'batchSize', options.batchSize ?? 500, 1, true);
  const maxBatches = checkedNumber(WORKER, 'maxBatches', options.maxBatches ?? 20, 1, true);
  const pauseRatio = checkedNumber(WORKER, 'pauseRatio', options.pauseRatio ?? 1, 0, false);
  const stuckAfterMs = checkedNumber(
    WORKER,
    'stuckAfterMs',
    options.stuckAfterMs ?? 300_000,
    0,
    false,
  );
  const intervalMs = checkedTimerMs(WORKER, 'intervalMs', options.intervalMs ?? 60_000, 0);
  const telemetry = createIdemTelemetry({
    ...(options.meter ? { meter: options.meter } : {}),
    tracing: false,
  });
  // One per run in flight, aborted by stop(): a pause ends at once, and the run ends after its batch.
  const inFlight = new Set<AbortController>();

  async function runOnce(): Promise<ReaperReport> {
    const run = new AbortController();
    inFlight.add(run);
    try {
      return await reap(run.signal);
    } finally {
      inFlight.delete(run);
    }
  }

  async function reap(signal: AbortSignal): Promise<ReaperReport> {
    let deleted = 0;
    for (let batch = 0; batch < maxBatches; batch++) {
      const started = clock.now();
      const n = await options.store.reap({ limit: batchSize });
      deleted += n;
      // A short batch means nothing is left; the last batch of the run needs no pause after it.
      if (n < batchSize || batch === maxBatches - 1 || signal.aborted) break;
      const pauseMs = Math.min((clock.now() - started) * pauseRatio, MAX_TIMER_MS);
      if (pauseMs > 0) await clock.sleep(pauseMs, signal);
      if (signal.aborted) break;
    }
    const stuck = await options.store.stuckReport({ graceMs: stuckAfterMs });
    const report = { deleted, stuck };
    telemetry.reaped(deleted);
    telemetry.stuck({ ...stuck });
    options.onReport?.(report);
    return report;
  }
  const worker = runPeriodically(runOnce, intervalMs, (error) => options.onError?.(error));
  return {
    runOnce,
    start: worker.start,
    async stop() {
      for (const run of inFlight) run.abort();
      await worker.stop();
    },
  };
}
