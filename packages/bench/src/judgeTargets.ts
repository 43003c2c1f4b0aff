import { isError, type BenchReport, type TargetResult } from './BenchReport.js';
import type { StormVariant } from './sections/measureStorm.js';
import { medianInterval, type Spread } from './stats.js';

const fixed = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : String(n));

/** A ratio's median and its runs' range, and where the median itself lies (see {@link within}). */
function ratioText(ratio: Spread): string {
  return `${fixed(ratio.median)} [${fixed(ratio.min)}-${fixed(ratio.max)}]${within(ratio)}`;
}

/**
 * Where the median of a judged ratio lies (`medianInterval`), for the targets table; nothing with
 * fewer than 5 runs.
 */
function within(ratio: Spread, digits = 2): string {
  const interval = medianInterval(ratio.runs);
  if (!interval) return '';
  const percent = Math.floor(interval.confidence * 100);
  return `, median in ${fixed(interval.low, digits)}-${fixed(interval.high, digits)} (${percent}%)`;
}

/**
 * Whether a ratio's verdict against `threshold` is settled: false when the interval of its median
 * holds the threshold (the same code, run again, may well be judged the other way); undefined
 * with too few runs to tell.
 */
function settledAgainst(ratio: Spread, threshold: number): boolean | undefined {
  const interval = medianInterval(ratio.runs);
  if (!interval) return undefined;
  return !(interval.low < threshold && threshold < interval.high);
}

/**
 * The throughput ratio idem/plain the overhead comparison must reach, by database. PGlite's is
 * lower: it runs in the server process, so no round trip hides the CPU idem's code costs.
 */
export const THROUGHPUT_TARGET = { postgres: 0.8, pglite: 0.6 } as const;

/**
 * Judges the targets on the medians of `report` (never on a single run).
 * Lines with `reported` are numbers shown beside the targets, never judged (`met` null).
 */
export function judgeTargets(report: Omit<BenchReport, 'targets'>): TargetResult[] {
  const targets: TargetResult[] = [];
  const add = (id: string, target: string, value: string, met: boolean | null, settled?: boolean) =>
    targets.push({ id, target, value, met, ...(settled === undefined ? {} : { settled }) });
  const reported = (id: string, target: string, value: string) =>
    targets.push({ id, target, value, met: null, reported: true });
  const { statements, overhead, replay, client, storm, scale } = report;
  const db = report.meta.db;

  if (statements && !isError(statements)) {
    const { plain, fresh, replay: again, extraRoundTripsPerFresh: extra } = statements;
    if (extra === null || fresh.roundTripsPerRequest === null) {
      const none = 'n/a: PGlite runs in the server process, no round trips';
      add(
        'roundtrips-fresh',
        'at most 1 extra round trip per fresh request over plain (PostgreSQL)',
        none,
        null,
      );
      add('roundtrips-replay', 'a replay in 1 round trip (PostgreSQL)', none, null);
    } else {
      add(
        'roundtrips-fresh',
        'at most 1 extra round trip per fresh request over plain (first attempt; PostgreSQL)',
        `${fixed(extra)} extra (${fixed(fresh.roundTripsPerRequest)} vs ${fixed(plain.roundTripsPerRequest!)})`,
        extra <= 1,
      );
      const raw = statements.freshRaw.roundTripsPerRequest!;
      const rawExtra = raw - plain.roundTripsPerRequest!;
      add(
        'roundtrips-fresh-raw',
        'at most 1 extra round trip per fresh request without an attempt header (PostgreSQL)',
        `${fixed(rawExtra)} extra (${fixed(raw)} vs ${fixed(plain.roundTripsPerRequest!)})`,
        rawExtra <= 1,
      );
      add(
        'roundtrips-replay',
        'a replay (a retry) in 1 round trip (PostgreSQL)',
        fixed(again.roundTripsPerRequest!),
        again.roundTripsPerRequest! <= 1,
      );
    }
    // Statements are reported, not judged: a request waits on round trips, and statements sent
    // in one write (pipelined) share one.
    reported(
      'statements-fresh',
      'extra SQL statements per fresh request (reported; round trips are judged)',
      `${fixed(statements.extraPerFresh)} extra (${fixed(fresh.perRequest)} vs ${fixed(plain.perRequest)})`,
    );
    reported(
      'statements-replay',
      'SQL statements per replay (reported; round trips are judged)',
      fixed(again.perRequest),
    );
  }
  if (overhead && !isError(overhead)) {
    const threshold = THROUGHPUT_TARGET[db];
    // What a fresh request of the judged path costs in round trips, beside its ratio.
    const trips =
      statements && !isError(statements) && statements.fresh.roundTripsPerRequest !== null
        ? `; ${fixed(statements.fresh.roundTripsPerRequest)} round trips per request, plain ${fixed(statements.plain.roundTripsPerRequest!)}`
        : '';
    for (const level of overhead) {
      add(
        `overhead-throughput-c${level.concurrency}`,
        `throughput ratio idem/plain >= ${threshold} (${db === 'postgres' ? 'PostgreSQL' : 'PGlite'}) at ${level.concurrency} connection(s), fresh keys as idem's client sends them (attempt 1)`,
        ratioText(level.throughputRatio) + trips,
        level.throughputRatio.median >= threshold,
        settledAgainst(level.throughputRatio, threshold),
      );
    }
    for (const level of overhead) {
      reported(
        `overhead-throughput-floor-c${level.concurrency}`,
        `throughput ratio of the floor (plain + idem's record, no middleware) at ${level.concurrency} connection(s) (reported)`,
        ratioText(level.floorThroughputRatio),
      );
    }
    for (const level of overhead) {
      reported(
        `overhead-throughput-raw-c${level.concurrency}`,
        `throughput ratio without an attempt header at ${level.concurrency} connection(s) (reported)`,
        ratioText(level.rawThroughputRatio),
      );
    }
  }
  if (replay && !isError(replay)) {
    for (const level of replay) {
      add(
        `replay-p50-c${level.concurrency}`,
        `replay p50 <= 1/2 fresh p50 at ${level.concurrency} connection(s)`,
        `${fixed(level.p50Ratio.median)} (${fixed(level.replay.p50.median)} vs ${fixed(level.fresh.p50.median)} ms)${within(level.p50Ratio)}`,
        level.p50Ratio.median <= 0.5,
        settledAgainst(level.p50Ratio, 0.5),
      );
    }
  }
  if (storm && !isError(storm)) {
    const { sequential, burst } = storm;
    add(
      'retries-sequential-invocations',
      `1 request then ${sequential.retries} sequential retries, each with Idempotency-Attempt: ${sequential.attempt}, run the handler once`,
      `${sequential.invocations} invocation(s), ${sequential.executions} execution(s), ${sequential.replayed} of ${sequential.retries} replayed`,
      sequential.invocations === 1 && sequential.executions === 1,
    );
    if ('skipped' in burst) {
      add('storm', 'same-key storm (PostgreSQL only)', `skipped: ${burst.skipped}`, null);
    } else {
      const variants = [burst.raw, burst.firstAttempt];
      const header = (v: StormVariant) =>
        v.attempt === null ? 'no attempt header' : `Idempotency-Attempt: ${v.attempt}`;
      add(
        'storm-executions',
        `one execution per storm of ${burst.requests}, with and without the attempt header`,
        variants.map((v) => `${header(v)}: ${v.executions.join(', ')}`).join('; '),
        variants.every((v) => v.executions.every((n) => n === 1)),
      );
      // Duplicates that read the key before any of them committed each run the handler; in one
      // process they wait for the first instead, so at most one per process runs.
      for (const [id, variant] of [
        ['storm-invocations-raw', burst.raw],
        ['storm-invocations-first-attempt', burst.firstAttempt],
      ] as const) {
        add(
          id,
          `handler invocations per storm, ${header(variant)}: at most 1 per server process (${burst.servers})`,
          `${variant.invocations.join(', ')} (of ${burst.requests} requests)`,
          variant.invocations.every((n) => n <= burst.servers),
        );
      }
      const fiveHundreds = burst.raw.fiveHundreds + burst.firstAttempt.fiveHundreds;
      add('storm-5xx', 'no 5xx in the storm', String(fiveHundreds), fiveHundreds === 0);
      const peak = Math.max(burst.raw.peakConnections, burst.firstAttempt.peakConnections);
      const active = Math.max(burst.raw.peakActive, burst.firstAttempt.peakActive);
      add(
        'storm-connections',
        `peak connections <= configured pools (${burst.configuredConnections})`,
        `${peak} (${active} active)`,
        peak <= burst.configuredConnections,
      );
    }
  }
  if (scale && !isError(scale)) {
    add(
      'scale-throughput',
      `fresh-claim throughput with ${scale.rows} rows within 10% of empty`,
      ratioText(scale.throughputRatio),
      scale.throughputRatio.median >= 0.9,
      settledAgainst(scale.throughputRatio, 0.9),
    );
    if ('skipped' in scale.reaper) {
      add(
        'reaper-p99',
        'foreground p99 while reaping <= 1.5x without',
        `skipped: ${scale.reaper.skipped}`,
        null,
      );
    } else if (!Number.isFinite(scale.reaper.p99Ratio.median)) {
      add(
        'reaper-p99',
        'foreground p99 while reaping <= 1.5x without',
        `not measured: the reaper drained the expired rows before a foreground request started (${fixed(scale.reaper.rowsPerSecond.median, 0)} rows/s)`,
        null,
      );
    } else {
      add(
        'reaper-p99',
        'foreground p99 while reaping <= 1.5x without',
        `${fixed(scale.reaper.p99Ratio.median)} (reaping ${fixed(scale.reaper.rowsPerSecond.median, 0)} rows/s)${within(scale.reaper.p99Ratio)}`,
        scale.reaper.p99Ratio.median <= 1.5,
        settledAgainst(scale.reaper.p99Ratio, 1.5),
      );
    }
  }
  if (client && !isError(client)) {
    for (const level of client.chains.filter((c) => c.target === 'idem')) {
      add(
        `client-link-c${level.concurrency}`,
        `idemLink within 5% of httpLink (idempotent mutation, ${level.concurrency} concurrent calls)`,
        `throughput ratio ${fixed(level.throughputRatio.median, 3)}, p50 +${fixed(level.addedP50Ms.median, 3)} ms${within(level.throughputRatio, 3)}`,
        level.throughputRatio.median >= 0.95,
        settledAgainst(level.throughputRatio, 0.95),
      );
    }
    const { budget } = client;
    const cap = 1 + budget.budgetRetries / budget.calls;
    add(
      'client-budget',
      `retry budget caps attempts per call at 1 + ${budget.budgetRetries}/${budget.calls} = ${fixed(cap)} (unlimited: ${budget.maxAttempts})`,
      `${fixed(budget.firstWave.median)} first wave, ${fixed(budget.nextWave.median)} next; unlimited ${fixed(budget.unlimited.median)}`,
      budget.firstWave.max <= cap + 1e-9 && budget.nextWave.max <= 1 + 1e-9,
    );
  }
  return targets;
}
