/**
 * The bench's smoke mode, on PGlite and on PostgreSQL, so that the bench never rots. It asserts
 * that every section ran and that its numbers are sane (positive, finite, consistent), never the
 * targets: smoke numbers are noise. Correctness holds at any size, so it is asserted: the storm's
 * one execution, no 5xx, no more connections than the pools, at most one handler invocation per
 * server process with or without the attempt header, and one invocation for a request and its
 * sequential retries that each say they are the first attempt.
 *
 * PostgreSQL runs on a private cluster started here: the WAL is counted for the whole server,
 * and on a shared one any other database's writes land in the bench's WAL figures.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createPrivateCluster, privateClustersAvailable } from '@idem/fixtures';
import { describe, expect, it } from 'vitest';
import { SMOKE } from '../src/benchOptions.js';
import type { BenchReport } from '../src/BenchReport.js';
import type { BudgetResult } from '../src/sections/measureBudget.js';
import type { ClientResult } from '../src/sections/measureClient.js';
import type { OverheadLevel } from '../src/sections/measureOverhead.js';
import type { ReplayLevel } from '../src/sections/measureReplay.js';
import type { ScaleResult } from '../src/sections/measureScale.js';
import type { StatementsResult } from '../src/sections/measureStatements.js';
import type { StormResult } from '../src/sections/measureStorm.js';
import type { RunsSummary } from '../src/sections/SectionContext.js';
import type { Spread } from '../src/stats.js';

const available = privateClustersAvailable();
const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));

/**
 * The private cluster's settings beyond `createPrivateCluster`'s: room for the bench's pools
 * (two servers of 10 and the scale section's two more); no checkpoint during the run (the first
 * change to each page after one writes the whole page to the WAL); no autovacuum, which on a
 * fresh cluster analyzes template1's catalogs (the rows initdb wrote) in its first minutes.
 */
const CLUSTER_SETTINGS = [
  'max_connections = 100',
  "checkpoint_timeout = '1d'",
  "max_wal_size = '4GB'",
  'autovacuum = off',
];

/** Runs `pnpm bench --smoke`: on PGlite, or on the PostgreSQL of `databaseUrl`. */
async function smoke(db: 'pglite' | 'postgres', databaseUrl = ''): Promise<BenchReport> {
  const dir = await mkdtemp(join(tmpdir(), 'idem-bench-'));
  const out = join(dir, `${db}.json`);
  try {
    const env = { ...process.env, DATABASE_URL: databaseUrl };
    await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', cli, '--smoke', `--db=${db}`, `--out=${out}`],
      { env, timeout: 240_000, maxBuffer: 16 * 2 ** 20 },
    ).catch((error: Error & { stderr?: string; stdout?: string }) => {
      // The bench reports a failed section on stderr and in the JSON; show both.
      throw new Error(`${error.message}\n${error.stderr ?? ''}\n${error.stdout ?? ''}`);
    });
    return JSON.parse(await readFile(out, 'utf8')) as BenchReport;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const positive = (n: number) => expect(Number.isFinite(n) && n > 0, String(n)).toBe(true);
const sane = (s: Spread) => {
  positive(s.median);
  expect(s.min).toBeLessThanOrEqual(s.median);
  expect(s.max).toBeGreaterThanOrEqual(s.median);
  expect(s.runs.length).toBeGreaterThanOrEqual(2);
};
const runs = (r: RunsSummary) => {
  sane(r.throughput);
  sane(r.p50);
  sane(r.p99);
  expect(r.p99.median).toBeGreaterThanOrEqual(r.p50.median);
  expect(r.failures).toEqual({});
};

function checkReport(report: BenchReport, db: 'pglite' | 'postgres') {
  // idem measured as published: its built packages, which the bench builds first (--from=dist).
  expect(report.meta).toMatchObject({ profile: 'smoke', db, from: 'dist' });
  positive(report.meta.machine.cpus);
  // Nothing but the bench uses the private cluster: its WAL is the bench's alone.
  if (db === 'postgres') {
    expect(report.meta.otherDatabases).toEqual({ rowsWritten: 0, createdOrDropped: 0 });
  } else expect(report.meta.otherDatabases).toBeNull();

  const statements = report.statements as StatementsResult;
  for (const kind of [statements.plain, statements.fresh, statements.freshRaw, statements.replay]) {
    positive(kind.perRequest);
    expect(Number.isInteger(kind.perRequest), 'whole statements per request').toBe(true);
    if (db === 'postgres') {
      // A replay is one statement outside any transaction; the others add BEGIN and COMMIT.
      const transaction = kind === statements.replay ? 0 : 2;
      expect(kind.wirePerRequest).toBe(kind.perRequest + transaction);
      positive(kind.roundTripsPerRequest!);
    } else expect(kind.roundTripsPerRequest).toBeNull();
  }
  expect(statements.fresh.perRequest).toBeGreaterThan(statements.plain.perRequest);
  // A first attempt reads its key like any request: the header changes no statement.
  expect(statements.fresh.perRequest).toBe(statements.freshRaw.perRequest);
  expect(statements.firstAttemptReadsKey).toBe(true);
  if (db === 'postgres') {
    expect(statements.extraRoundTripsPerFresh).toBe(
      statements.fresh.roundTripsPerRequest! - statements.plain.roundTripsPerRequest!,
    );
  } else expect(statements.extraRoundTripsPerFresh).toBeNull();

  const overhead = report.overhead as OverheadLevel[];
  expect(overhead.map((l) => l.concurrency)).toEqual([1, 8, 32]);
  for (const level of overhead) {
    runs(level.plain);
    runs(level.idem);
    runs(level.idemRaw);
    sane(level.throughputRatio);
    sane(level.rawThroughputRatio);
    // The floor ran as often as the others: its requests were answered, not refused.
    runs(level.floor);
    sane(level.floorThroughputRatio);
    // The WAL written per request (PostgreSQL): the record adds a row and its index entries to
    // the plain mutation's, and the floor writes that record too.
    if (db === 'postgres') {
      for (const variant of [level.plain, level.idem, level.idemRaw, level.floor]) {
        sane(variant.walBytesPerRequest!);
      }
      expect(level.idem.walBytesPerRequest!.min).toBeGreaterThan(
        level.plain.walBytesPerRequest!.max,
      );
      expect(level.floor.walBytesPerRequest!.min).toBeGreaterThan(
        level.plain.walBytesPerRequest!.max,
      );
    } else {
      expect(level.plain.walBytesPerRequest).toBeUndefined();
    }
  }

  const replay = report.replay as ReplayLevel[];
  expect(replay.length).toBeGreaterThan(0);
  for (const level of replay) {
    runs(level.fresh);
    runs(level.replay);
    expect(level.replayedShare).toBe(1);
  }

  const client = report.client as ClientResult;
  expect(client.chains.map((c) => c.target).sort()).toEqual(['echo', 'idem']);
  for (const chain of client.chains) {
    runs(chain.httpLink);
    runs(chain.idemLink);
    sane(chain.throughputRatio);
    // The load generator's own CPU per call, window by window, for each chain.
    sane(chain.clientCpuUsPerCall.httpLink);
    sane(chain.clientCpuUsPerCall.idemLink);
  }
  for (const perCall of [
    client.budget.firstWave,
    client.budget.nextWave,
    client.budget.unlimited,
  ]) {
    expect(perCall.min).toBeGreaterThanOrEqual(1);
    expect(perCall.max).toBeLessThanOrEqual(client.budget.maxAttempts);
  }

  const { sequential, burst } = report.storm as StormResult;
  // One request, then retries one after another that each say "first attempt": the key is read
  // before the handler every time, so it runs once and every retry is a replay.
  expect(sequential).toMatchObject({ invocations: 1, executions: 1, replayed: sequential.retries });
  expect(sequential.statuses).toEqual({ '200': 1 + sequential.retries });
  if (db === 'pglite') expect(burst).toHaveProperty('skipped');
  else {
    if ('skipped' in burst) throw new Error(`storm skipped on PostgreSQL: ${burst.skipped}`);
    expect([burst.raw.attempt, burst.firstAttempt.attempt]).toEqual([null, 1]);
    for (const variant of [burst.raw, burst.firstAttempt]) {
      expect(variant.runs).toHaveLength(SMOKE.storm.reps);
      expect(variant.executions).toEqual(variant.runs.map(() => 1));
      expect(variant.invocations).toEqual(variant.runs.map((r) => r.invocations));
      // At most one handler per server process: the others waited for it, or read the key.
      for (const run of variant.runs) {
        expect(run.invocations).toBeGreaterThanOrEqual(1);
        expect(run.invocations).toBeLessThanOrEqual(burst.servers);
      }
      expect(variant.fiveHundreds).toBe(0);
      expect(variant.peakConnections).toBeGreaterThan(0);
      expect(variant.peakConnections).toBeLessThanOrEqual(burst.configuredConnections);
      sane(variant.totalMs);
    }
  }

  const scale = report.scale as ScaleResult;
  runs(scale.empty);
  runs(scale.full);
  if (db === 'postgres') {
    sane(scale.empty.walBytesPerRequest!);
    sane(scale.full.walBytesPerRequest!);
  } else expect(scale.full.walBytesPerRequest).toBeUndefined();
  sane(scale.throughputRatio);
  if ('skipped' in scale.reaper) throw new Error(`reaper skipped: ${scale.reaper.skipped}`);
  for (const run of scale.reaper.runs) positive(run.deleted);
  sane(scale.reaper.rowsPerSecond);

  const budget = report.budget as BudgetResult;
  for (const variant of [budget.plain, budget.idem]) {
    expect(Number.isInteger(variant.requests) && variant.requests > 0).toBe(true);
    for (const us of [variant.mainThreadUs, variant.sampledWallUs, variant.serverUs]) positive(us);
    positive(variant.loadGeneratorUs);
    expect(variant.profilerUs).toBeGreaterThanOrEqual(0);
    expect(variant.totalUs).toBeGreaterThanOrEqual(variant.serverUs);
    // The categories split the main thread's CPU: they add up to it, none below zero.
    const { idle, ...busy } = variant.categories;
    expect(idle).toBeGreaterThanOrEqual(0);
    for (const us of Object.values(busy)) expect(us).toBeGreaterThanOrEqual(0);
    const sum = Object.values(busy).reduce((a, b) => a + b, 0);
    expect(Math.abs(sum - variant.mainThreadUs)).toBeLessThan(1e-6 * variant.mainThreadUs);
    if (db === 'postgres') {
      expect(variant.postgresUs).toBeGreaterThanOrEqual(0);
      expect(variant.postgresBackends).toBeGreaterThan(0);
    } else expect(variant.postgresUs).toBeNull();
  }
  expect(budget.plain.statementsPerRequest).toBe(budget.roundTrips.drizzlePlain);
  expect(budget.idem.statementsPerRequest).toBe(budget.roundTrips.drizzleIdem);
  expect(budget.roundTrips.drizzleIdem).toBeGreaterThan(budget.roundTrips.drizzlePlain);
  if (db === 'postgres') {
    expect(budget.roundTrips.plain).toBe(budget.roundTrips.drizzlePlain + 2); // BEGIN, COMMIT
    expect(budget.roundTrips.idem).toBe(budget.roundTrips.drizzleIdem + 2);
  } else expect(budget.roundTrips.plain).toBeNull();
  expect(budget.idemTop.length).toBeGreaterThan(0);
  for (const f of budget.idemTop) positive(f.us);

  expect(report.targets.length).toBeGreaterThan(5);
  for (const target of report.targets) {
    expect([true, false, null]).toContain(target.met);
    if (target.reported) expect(target.met).toBeNull();
  }
  // The judged lines are there (met or not: smoke numbers are noise).
  const ids = report.targets.map((t) => t.id);
  expect(ids).toEqual(
    expect.arrayContaining([
      'roundtrips-fresh',
      'roundtrips-replay',
      'overhead-throughput-c1',
      'overhead-throughput-c8',
      'overhead-throughput-c32',
      'overhead-throughput-floor-c8',
      'overhead-throughput-raw-c8',
      'retries-sequential-invocations',
      ...(db === 'postgres'
        ? [
            'roundtrips-fresh-raw',
            'storm-executions',
            'storm-invocations-raw',
            'storm-invocations-first-attempt',
            'storm-5xx',
          ]
        : []),
    ]),
  );
  const roundTrips = report.targets.find((t) => t.id === 'roundtrips-fresh')!;
  if (db === 'postgres') expect(roundTrips.met).not.toBeNull();
  else expect(roundTrips.met).toBeNull();
  // Correctness, unlike speed, is judged even on smoke numbers.
  const correct = ['retries-sequential-invocations'];
  if (db === 'postgres') {
    correct.push('storm-executions', 'storm-invocations-raw', 'storm-invocations-first-attempt');
  }
  for (const id of correct) expect(report.targets.find((t) => t.id === id)?.met, id).toBe(true);
}

describe.concurrent('pnpm bench --smoke', () => {
  it('runs every section on PGlite', async () => {
    checkReport(await smoke('pglite'), 'pglite');
  });
  it.skipIf(!available)('runs every section on PostgreSQL (a private cluster)', async () => {
    await using cluster = await createPrivateCluster(CLUSTER_SETTINGS);
    checkReport(await smoke('postgres', cluster.url()), 'postgres');
  });
});
