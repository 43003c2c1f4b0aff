import type { RecoveryStore, StuckReport } from '@idem/contract';
import { describe, expect, it } from 'vitest';
import {
  createPacedReaper,
  createReaper,
  type ReaperClock,
  type ReaperOptions,
} from './createReaper.js';

const NOTHING_STUCK: StuckReport = {
  abandoned: 0,
  pendingTooLong: 0,
  outcomeUnknown: 0,
  needsReconciliation: 0,
};

/**
 * A store whose `reap` deletes the next count of `batches` (then 0), taking `batchMs` of the
 * fake clock each; the clock records every pause the reaper asks for.
 */
function harness(batches: number[], batchMs: number[]) {
  let now = 0;
  const pauses: number[] = [];
  const limits: number[] = [];
  let pending: { resolve(): void } | null = null;
  const clock: ReaperClock = {
    now: () => now,
    sleep(ms, signal) {
      pauses.push(ms);
      if (signal.aborted) return Promise.resolve();
      // Resolved by the test (`elapse`) or by stop()'s abort, whichever comes first.
      return new Promise<void>((resolve) => {
        pending = { resolve };
        signal.addEventListener('abort', () => resolve(), { once: true });
      });
    },
  };
  let call = 0;
  const store = {
    async reap({ limit }: { limit: number }) {
      limits.push(limit);
      now += batchMs[call] ?? 0;
      return batches[call++] ?? 0;
    },
    async stuckReport() {
      return NOTHING_STUCK;
    },
  } as unknown as RecoveryStore<unknown>;
  return {
    clock,
    store,
    pauses,
    limits,
    /** Ends the pause in flight, as its timer would. */
    elapse() {
      const p = pending;
      pending = null;
      p?.resolve();
    },
    get waiting() {
      return pending !== null;
    },
  };
}

/** Runs `runOnce` with every pause ending at once. */
async function runWithPausesElapsing(
  h: ReturnType<typeof harness>,
  options: Omit<ReaperOptions, 'store'>,
) {
  const reaper = createPacedReaper({ store: h.store, ...options }, h.clock);
  const run = reaper.runOnce();
  for (let i = 0; i < 100; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    h.elapse();
  }
  return run;
}

describe('createReaper: pacing', () => {
  it('pauses after each full batch for pauseRatio times the batch, never after the last', async () => {
    const h = harness([10, 10, 10, 4], [20, 40, 10, 5]);
    const report = await runWithPausesElapsing(h, { batchSize: 10, pauseRatio: 1.5 });
    expect(report.deleted).toBe(34);
    // No pause after the short (last) batch.
    expect(h.pauses).toEqual([30, 60, 15]);
    expect(h.limits).toEqual([10, 10, 10, 10]);
  });

  it('defaults to a pause as long as the batch (the reaper holds the database half the time)', async () => {
    const h = harness([500, 500, 0], [8, 12, 1]);
    const report = await runWithPausesElapsing(h, {});
    expect(report.deleted).toBe(1000);
    expect(h.pauses).toEqual([8, 12]);
  });

  it('runs the batches back to back with pauseRatio 0', async () => {
    const h = harness([10, 10, 10, 10], [20, 20, 20, 20]);
    const report = await runWithPausesElapsing(h, { batchSize: 10, pauseRatio: 0 });
    expect(report.deleted).toBe(40);
    expect(h.pauses).toEqual([]);
  });

  it('does not pause after the run’s last batch (maxBatches)', async () => {
    const h = harness([10, 10, 10], [5, 5, 5]);
    const report = await runWithPausesElapsing(h, { batchSize: 10, maxBatches: 2 });
    expect(report.deleted).toBe(20);
    expect(h.pauses).toEqual([5]);
  });

  it('never asks a timer for more than it can wait (2^31 - 1 ms)', async () => {
    const h = harness([10, 3], [5, 5]);
    await runWithPausesElapsing(h, { batchSize: 10, pauseRatio: 1e12 });
    expect(h.pauses).toEqual([2_147_483_647]);
  });

  it('stop() ends a pause at once, and the run after the batch it was in', async () => {
    const h = harness(Array(20).fill(10), Array(20).fill(1_000_000));
    const reports: number[] = [];
    const reaper = createPacedReaper(
      { store: h.store, batchSize: 10, intervalMs: 0, onReport: (r) => reports.push(r.deleted) },
      h.clock,
    );
    reaper.start();
    for (let i = 0; i < 100 && !h.waiting; i++) await new Promise((r) => setImmediate(r));
    expect(h.waiting).toBe(true); // paused for 1 000 000 ms after the first batch
    await reaper.stop(); // would hang for the fake million ms if the pause were not cut short
    expect(h.limits).toHaveLength(1);
    expect(reports).toEqual([10]);
  });

  it('a run started by hand after stop() runs whole', async () => {
    const h = harness([10, 10, 3], [2, 2, 2]);
    const reaper = createPacedReaper({ store: h.store, batchSize: 10 }, h.clock);
    await reaper.stop();
    const run = reaper.runOnce();
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setImmediate(r));
      h.elapse();
    }
    expect((await run).deleted).toBe(23);
  });
});

describe('createReaper: options are checked at start-up', () => {
  const store = harness([], []).store;
  it.each([
    ['batchSize', 0],
    ['batchSize', 2.5],
    ['batchSize', Number.NaN],
    ['maxBatches', 0],
    ['maxBatches', -1],
    ['pauseRatio', -0.5],
    ['pauseRatio', Number.POSITIVE_INFINITY],
    ['pauseRatio', Number.NaN],
    ['stuckAfterMs', -1],
    ['intervalMs', Number.NaN],
    // Past 2^31 - 1 ms a timer fires after 1 ms: the reaper would run in a loop.
    ['intervalMs', 2 ** 31],
  ] as const)('%s: %s is refused, naming the option', (name, value) => {
    expect(() => createReaper({ store, [name]: value })).toThrow(
      new RegExp(`^createReaper: ${name} must be`),
    );
  });

  it('accepts the documented edges', () => {
    expect(() =>
      createReaper({
        store,
        batchSize: 1,
        maxBatches: 1,
        pauseRatio: 0,
        stuckAfterMs: 0,
        intervalMs: 0,
      }),
    ).not.toThrow();
  });
});
