import { isError, type BenchReport, type TargetResult } from './BenchReport.js';

const fixed = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : String(n));

/** Judges the targets of issue 6 on the medians of `report` (never on a single run). */
export function judgeTargets(report: Omit<BenchReport, 'targets'>): TargetResult[] {
  const targets: TargetResult[] = [];
  const add = (id: string, target: string, value: string, met: boolean | null) =>
    targets.push({ id, target, value, met });
  const { statements, overhead, replay, client, storm, scale } = report;

  if (statements && !isError(statements)) {
    add(
      'statements-fresh',
      'at most 2 extra SQL statements per fresh request',
      `${fixed(statements.extraPerFresh)} extra (${fixed(statements.fresh.perRequest)} vs ${fixed(statements.plain.perRequest)})`,
      statements.extraPerFresh <= 2,
    );
    add(
      'statements-replay',
      'exactly 1 SQL statement per replay',
      `${fixed(statements.replay.perRequest)}`,
      statements.replay.perRequest === 1,
    );
  }
  if (overhead && !isError(overhead) && overhead.length > 0) {
    const top = overhead.reduce((a, b) => (b.concurrency > a.concurrency ? b : a));
    add(
      'overhead-throughput',
      `throughput ratio idem/plain >= 0.8 at ${top.concurrency} connections`,
      fixed(top.throughputRatio.median),
      top.throughputRatio.median >= 0.8,
    );
  }
  if (replay && !isError(replay)) {
    for (const level of replay) {
      add(
        `replay-p50-c${level.concurrency}`,
        `replay p50 <= 1/2 fresh p50 at ${level.concurrency} connection(s)`,
        `${fixed(level.p50Ratio.median)} (${fixed(level.replay.p50.median)} vs ${fixed(level.fresh.p50.median)} ms)`,
        level.p50Ratio.median <= 0.5,
      );
    }
  }
  if (storm && !isError(storm)) {
    if ('skipped' in storm) {
      add('storm', 'same-key storm (PostgreSQL only)', `skipped: ${storm.skipped}`, null);
    } else {
      add(
        'storm-executions',
        `exactly one execution per storm of ${storm.requests}`,
        storm.executions.join(', '),
        storm.executions.every((n) => n === 1),
      );
      add('storm-5xx', 'no 5xx in the storm', String(storm.fiveHundreds), storm.fiveHundreds === 0);
      add(
        'storm-connections',
        `peak connections <= configured pools (${storm.configuredConnections})`,
        `${storm.peakConnections} (${storm.peakActive} active)`,
        storm.peakConnections <= storm.configuredConnections,
      );
    }
  }
  if (scale && !isError(scale)) {
    add(
      'scale-throughput',
      `fresh-claim throughput with ${scale.rows} rows within 10% of empty`,
      `${fixed(scale.throughputRatio.median)} [${fixed(scale.throughputRatio.min)}-${fixed(scale.throughputRatio.max)}]`,
      scale.throughputRatio.median >= 0.9,
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
        `${fixed(scale.reaper.p99Ratio.median)} (reaping ${fixed(scale.reaper.rowsPerSecond.median, 0)} rows/s)`,
        scale.reaper.p99Ratio.median <= 1.5,
      );
    }
  }
  if (client && !isError(client)) {
    for (const level of client.chains.filter((c) => c.target === 'idem')) {
      add(
        `client-link-c${level.concurrency}`,
        `idemLink within 5% of httpLink (idempotent mutation, ${level.concurrency} concurrent calls)`,
        `throughput ratio ${fixed(level.throughputRatio.median, 3)}, p50 +${fixed(level.addedP50Ms.median, 3)} ms`,
        level.throughputRatio.median >= 0.95,
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
