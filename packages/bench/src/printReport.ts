import { isError, type BenchReport } from './BenchReport.js';
import { printBudget } from './printBudget.js';
import type { Spread } from './stats.js';
import type { StatementCount, StatementsResult } from './sections/measureStatements.js';
import type { RunsSummary } from './sections/SectionContext.js';
import { table } from './textTable.js';

/** `median [min-max]`, with `digits` decimals. */
function s(value: Spread, digits = 2): string {
  const f = (n: number) => n.toFixed(digits);
  return value.runs.length > 1
    ? `${f(value.median)} [${f(value.min)}-${f(value.max)}]`
    : f(value.median);
}

/** The report as readable tables. */
export function printReport(report: BenchReport): string {
  const { meta } = report;
  const out: string[] = [
    `idem bench: ${meta.profile} profile on ${meta.db} (${meta.databaseVersion}); idem ${meta.from === 'dist' ? 'from its built packages (dist/), as published' : 'from its TypeScript sources through tsx (slower than published)'}`,
    `${meta.machine.cpus} CPUs (${meta.machine.model}), ${meta.machine.memoryGiB} GiB, ${meta.machine.os}, node ${meta.machine.node}; ` +
      `${meta.reps} runs per measurement (${meta.judgedReps} for the comparisons the targets judge) of ${meta.durationMs} ms after ${meta.warmupMs} ms warm-up; pool ${meta.poolMax} per server`,
    `Load average (1 min) ${meta.loadAverage.start.toFixed(2)} at the start, ${meta.loadAverage.end.toFixed(2)} at the end; run took ${meta.durationS} s`,
    'Cells: median [min-max] over the runs. Latencies in ms.',
  ];
  if (meta.profile === 'smoke')
    out.push('SMOKE RUN: every number below is noise; it only proves the bench runs.');
  const others = otherWrites(meta);
  if (others)
    out.push(
      `WARNING: ${others} during the run. WAL is counted for the whole server, so the WAL figures below include those writes; they are idem's alone only on a server with nothing else writing.`,
    );
  const failed = (name: string, value: unknown) =>
    isError(value) && out.push(`\n${name}: FAILED: ${value.error}`);

  const { statements, overhead, replay, client, storm, scale, budget } = report;
  failed('statements', statements);
  if (statements && !isError(statements)) {
    const verbs = (v: Record<string, number>) =>
      Object.entries(v)
        .map(([k, n]) => `${k} ${n.toFixed(2)}`)
        .join(', ');
    const wire = (n: number | null) => (n === null ? 'n/a' : n.toFixed(2));
    out.push(
      table(
        `SQL statements per request (counted over ${statements.requests} sequential requests each)`,
        ['request', 'statements', 'with BEGIN/COMMIT', 'round trips', 'by first keyword'],
        [
          [
            'plain.create (baseline)',
            statements.plain.perRequest.toFixed(2),
            wire(statements.plain.wirePerRequest),
            wire(statements.plain.roundTripsPerRequest),
            verbs(statements.plain.byVerb),
          ],
          [
            "idem.create, fresh key (attempt 1, as idem's client sends it)",
            statements.fresh.perRequest.toFixed(2),
            wire(statements.fresh.wirePerRequest),
            wire(statements.fresh.roundTripsPerRequest),
            verbs(statements.fresh.byVerb),
          ],
          [
            'idem.create, fresh key (no attempt header)',
            statements.freshRaw.perRequest.toFixed(2),
            wire(statements.freshRaw.wirePerRequest),
            wire(statements.freshRaw.roundTripsPerRequest),
            verbs(statements.freshRaw.byVerb),
          ],
          [
            'idem.create, replay (a retry, attempt 2)',
            statements.replay.perRequest.toFixed(2),
            wire(statements.replay.wirePerRequest),
            wire(statements.replay.roundTripsPerRequest),
            verbs(statements.replay.byVerb),
          ],
          [
            'extra per fresh request',
            statements.extraPerFresh.toFixed(2),
            wire(statements.extraPerFreshWire),
            wire(statements.extraRoundTripsPerFresh),
            '',
          ],
        ],
      ),
      firstAttemptRead(statements),
    );
  }
  failed('overhead', overhead);
  if (overhead && !isError(overhead)) {
    const measured = statements && !isError(statements) ? statements : null;
    const tripsOf = (count: StatementCount) => count.roundTripsPerRequest?.toFixed(2) ?? 'n/a';
    const trips = measured ? `${tripsOf(measured.fresh)}/${tripsOf(measured.plain)}` : 'n/a';
    const tripsLine =
      measured === null
        ? 'round trips: not measured (the statements section did not run)'
        : measured.fresh.roundTripsPerRequest === null
          ? `no round trips (PGlite runs in the server process); ${firstAttemptRead(measured)}`
          : `round trips per request (statements section): idem ${tripsOf(measured.fresh)}, raw ${tripsOf(measured.freshRaw)}, plain ${tripsOf(measured.plain)}; ${firstAttemptRead(measured)}`;
    out.push(
      table(
        'Overhead: idempotent mutation (fresh key each) vs the same mutation without idem, both in a transaction.\n' +
          "idem: as idem's client sends a fresh key (Idempotency-Attempt: 1), the path the targets judge; raw: without the attempt header;\n" +
          "floor: the plain mutation plus idem's record of it, written by idem's store with the COMMIT, without idem's middleware;\n" +
          tripsLine,
        [
          'conns',
          'plain req/s',
          'idem req/s',
          'ratio',
          'round trips idem/plain',
          'raw req/s',
          'raw ratio',
          'floor req/s',
          'floor ratio',
          'plain p50',
          'idem p50',
          'plain p99',
          'idem p99',
        ],
        overhead.map((l) => [
          String(l.concurrency),
          s(l.plain.throughput, 0),
          s(l.idem.throughput, 0),
          s(l.throughputRatio),
          trips,
          s(l.idemRaw.throughput, 0),
          s(l.rawThroughputRatio),
          s(l.floor.throughput, 0),
          s(l.floorThroughputRatio),
          s(l.plain.p50),
          s(l.idem.p50),
          s(l.plain.p99),
          s(l.idem.p99),
        ]),
      ),
    );
    const wal = overhead.filter((l) => l.plain.walBytesPerRequest && l.idem.walBytesPerRequest);
    if (wal.length > 0)
      out.push(
        table(
          'WAL PostgreSQL wrote per request, in bytes (warm-up included; tables truncated before each run); ' +
            (others
              ? `NOT idem's alone: ${others} during the run`
              : 'pg_stat_database shows no other database writing during the run'),
          ['conns', 'plain', 'idem', 'raw', 'floor'],
          wal.map((l) => [
            String(l.concurrency),
            s(l.plain.walBytesPerRequest!, 0),
            s(l.idem.walBytesPerRequest!, 0),
            l.idemRaw.walBytesPerRequest ? s(l.idemRaw.walBytesPerRequest, 0) : 'n/a',
            l.floor.walBytesPerRequest ? s(l.floor.walBytesPerRequest, 0) : 'n/a',
          ]),
        ),
      );
  }
  failed('replay', replay);
  if (replay && !isError(replay)) {
    out.push(
      table(
        'Replay: the same keys again vs their fresh first requests',
        [
          'conns',
          'fresh p50',
          'replay p50',
          'p50 ratio',
          'fresh p99',
          'replay p99',
          'replay req/s',
          'replayed',
        ],
        replay.map((l) => [
          String(l.concurrency),
          s(l.fresh.p50),
          s(l.replay.p50),
          s(l.p50Ratio),
          s(l.fresh.p99),
          s(l.replay.p99),
          s(l.replay.throughput, 0),
          `${(l.replayedShare * 100).toFixed(1)}%`,
        ]),
      ),
    );
  }
  failed('client', client);
  if (client && !isError(client)) {
    out.push(
      table(
        'Client: [idemLink, httpLink] vs [httpLink] (fresh key per call either way), nothing failing;\n' +
          "both clients in one load-generator process, alternating windows (cells over windows); client CPU: the load generator's µs per call",
        [
          'target',
          'calls',
          'windows',
          'httpLink/s',
          'idemLink/s',
          'ratio',
          'httpLink p50',
          'idemLink p50',
          'added p50',
          'client CPU http',
          'client CPU idem',
        ],
        client.chains.map((c) => [
          c.target === 'idem' ? 'idem.create' : 'echo (no db)',
          String(c.concurrency),
          `${c.httpLink.p50.runs.length} x ${c.windowMs} ms`,
          s(c.httpLink.throughput, 0),
          s(c.idemLink.throughput, 0),
          s(c.throughputRatio, 3),
          s(c.httpLink.p50, 3),
          s(c.idemLink.p50, 3),
          s(c.addedP50Ms, 3),
          s(c.clientCpuUsPerCall.httpLink, 0),
          s(c.clientCpuUsPerCall.idemLink, 0),
        ]),
      ),
    );
    const b = client.budget;
    out.push(
      table(
        `Retry budget: ${b.calls} concurrent logical calls through ONE client, server answers 503 to all (max ${b.maxAttempts} attempts, backoff base ${b.backoffBaseMs} ms)`,
        ['budget', 'attempts per logical call'],
        [
          ['default, first wave (full bucket)', s(b.firstWave)],
          ['default, next wave (bucket spent)', s(b.nextWave)],
          ['unlimited (per-call limit only)', s(b.unlimited)],
          [
            'give-ups',
            Object.entries(b.giveUps)
              .map(([k, n]) => `${k} ${n}`)
              .join(', '),
          ],
        ],
      ),
    );
  }
  failed('storm', storm);
  if (storm && !isError(storm)) {
    const { sequential, burst } = storm;
    if ('skipped' in burst) out.push(`\nSame-key storm: skipped: ${burst.skipped}`);
    else
      out.push(
        table(
          `Same-key storm: ${burst.requests} concurrent requests, one key, ${burst.servers} server processes (pools ${burst.configuredConnections} connections in all);\n` +
            'once without the attempt header (a raw HTTP client), once with Idempotency-Attempt: 1 on every request (an old or careless client, a reload that restarts its count)',
          [
            'attempt header',
            'run',
            'total ms',
            'executions',
            'invocations',
            'statuses',
            'replayed',
            'bodies',
            'peak conns (active)',
            'conns before',
          ],
          [burst.raw, burst.firstAttempt].flatMap((variant) =>
            variant.runs.map((r, i) => [
              variant.attempt === null ? 'none' : String(variant.attempt),
              String(i + 1),
              r.totalMs.toFixed(0),
              String(r.executions),
              String(r.invocations),
              JSON.stringify(r.statuses),
              String(r.replayed),
              String(r.distinctBodies),
              `${r.peak.total} (${r.peak.active})`,
              String(r.before),
            ]),
          ),
        ),
      );
    out.push(
      `Sequential retries: 1 request, then ${sequential.retries} retries of its key one after another, each with Idempotency-Attempt: ${sequential.attempt}: ` +
        `${sequential.invocations} handler invocation(s), ${sequential.executions} execution(s), ${sequential.replayed} of ${sequential.retries} replayed, statuses ${JSON.stringify(sequential.statuses)}`,
    );
  }
  failed('scale', scale);
  if (scale && !isError(scale)) {
    const walOf = (runs: RunsSummary) =>
      runs.walBytesPerRequest ? s(runs.walBytesPerRequest, 0) : 'n/a';
    const rows: string[][] = [
      [
        'fresh claims, empty table',
        s(scale.empty.throughput, 0),
        s(scale.empty.p50),
        s(scale.empty.p99),
        walOf(scale.empty),
      ],
      [
        `fresh claims, ${scale.rows} rows`,
        s(scale.full.throughput, 0),
        s(scale.full.p50),
        s(scale.full.p99),
        walOf(scale.full),
      ],
    ];
    out.push(
      table(
        `Scale: ${scale.rows} rows (${scale.expired} expired) loaded with generate_series in ${(scale.seedMs.insert / 1000).toFixed(1)} s; ${scale.concurrency} connections`,
        ['measurement', 'req/s', 'p50', 'p99', 'WAL bytes/req'],
        rows,
      ),
      `throughput ratio full/empty, run by run: ${s(scale.throughputRatio, 3)}`,
    );
    if ('skipped' in scale.reaper) out.push(`reaper: skipped: ${scale.reaper.skipped}`);
    else
      out.push(
        table(
          'Reaper (createReaper: batches of 500, each followed by a pause as long as it took) while the same foreground runs',
          [
            'run',
            'deleted',
            'rows/s',
            'window ms',
            'fg requests',
            'fg p50',
            'fg p99',
            'p99 without',
            'ratio',
          ],
          scale.reaper.runs.map((r, i) => [
            String(i + 1),
            String(r.deleted),
            r.rowsPerSecond.toFixed(0),
            String(r.windowMs) + (r.drained ? ' (drained)' : ''),
            String(r.foregroundRequests),
            r.p50.toFixed(2),
            r.p99.toFixed(2),
            r.p99Without.toFixed(2),
            (r.p99 / r.p99Without).toFixed(2),
          ]),
        ),
      );
  }
  failed('budget', budget);
  if (budget && !isError(budget)) out.push(printBudget(budget));
  out.push(
    table(
      "Targets, judged on medians; unsettled: the interval of a ratio's median holds its threshold",
      ['target', 'measured', 'verdict'],
      report.targets.map((t) => [
        t.target,
        t.value,
        (t.met === null ? (t.reported ? 'reported' : 'not measured') : t.met ? 'met' : 'MISSED') +
          (t.settled === false ? ' (unsettled)' : ''),
      ]),
    ),
  );
  return out.join('\n');
}

/** What the server's other databases wrote during the run, in words; null when nothing. */
function otherWrites(meta: BenchReport['meta']): string | null {
  const others = meta.otherDatabases;
  if (!others || (others.rowsWritten === 0 && others.createdOrDropped === 0)) return null;
  return `other databases on this PostgreSQL server wrote ${others.rowsWritten} rows, and ${others.createdOrDropped} were created or dropped,`;
}

/** Whether a first attempt read its key, as the statement counts show. */
function firstAttemptRead(statements: StatementsResult): string {
  const saved = statements.freshRaw.perRequest - statements.fresh.perRequest;
  return statements.firstAttemptReadsKey
    ? 'a first attempt reads its key before the handler like any request: the attempt header skips nothing'
    : `a first attempt skips the key read: ${saved.toFixed(2)} statements fewer than without the attempt header`;
}
