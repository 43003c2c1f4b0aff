import type { RecoveryStore, StuckReport } from '@idem/contract';
import type { Meter } from '@opentelemetry/api';
import { createIdemTelemetry } from '../telemetry/idemTelemetry.js';
import { runPeriodically, type PeriodicWorker } from './runPeriodically.js';

/** Options of {@link createReaper} (configured once per worker). */
export interface ReaperOptions {
  /** The store whose records are reaped. */
  store: RecoveryStore<unknown>;
  /** Rows deleted per statement, by primary key. Defaults to 500: short locks, little WAL at once. */
  batchSize?: number;
  /** Statements per run at most; the rest waits for the next run. Defaults to 20. */
  maxBatches?: number;
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

/** The reaper worker. */
export interface Reaper extends PeriodicWorker {
  runOnce(): Promise<ReaperReport>;
}

/**
 * Deletes terminal records past their cleanup time in bounded batches, and reports what it found
 * stuck. It never deletes PENDING, IN_PROGRESS, OUTCOME_UNKNOWN or NEEDS_RECONCILIATION records.
 * Safe to run on several instances at once.
 */
export function createReaper(options: ReaperOptions): Reaper {
  const batchSize = options.batchSize ?? 500;
  const maxBatches = options.maxBatches ?? 20;
  const telemetry = createIdemTelemetry({
    ...(options.meter ? { meter: options.meter } : {}),
    tracing: false,
  });
  async function runOnce(): Promise<ReaperReport> {
    let deleted = 0;
    for (let batch = 0; batch < maxBatches; batch++) {
      const n = await options.store.reap({ limit: batchSize });
      deleted += n;
      if (n < batchSize) break;
    }
    const stuck = await options.store.stuckReport({ graceMs: options.stuckAfterMs ?? 300_000 });
    const report = { deleted, stuck };
    telemetry.reaped(deleted);
    telemetry.stuck({ ...stuck });
    options.onReport?.(report);
    return report;
  }
  const worker = runPeriodically(runOnce, options.intervalMs ?? 60_000, (error) =>
    options.onError?.(error),
  );
  return { runOnce, ...worker };
}
