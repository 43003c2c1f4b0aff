/**
 * `pnpm bench`: the orchestrator. It creates the run's database (PostgreSQL) or none (PGlite
 * lives in each server process), starts the bench server and the load generator as child
 * processes on loopback, runs each section, prints the tables to stdout (progress goes to
 * stderr), writes the JSON, and drops the database. Exit code 1 when a section failed.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg, release, totalmem, type } from 'node:os';
import { dirname, join } from 'node:path';
import { createBenchDatabase, type BenchDatabase, type OtherDatabases } from './benchDatabase.js';
import { buildPackages, fromEnv } from './builtPackages.js';
import { parseBenchArgs, type SectionName } from './benchOptions.js';
import type { BenchReport } from './BenchReport.js';
import { judgeTargets } from './judgeTargets.js';
import { printReport } from './printReport.js';
import { startServer, startWorker } from './processes.js';
import { measureBudget } from './sections/measureBudget.js';
import { measureClient } from './sections/measureClient.js';
import { measureOverhead } from './sections/measureOverhead.js';
import { measureReplay } from './sections/measureReplay.js';
import { measureScale } from './sections/measureScale.js';
import { measureStatements } from './sections/measureStatements.js';
import { measureStorm } from './sections/measureStorm.js';
import { keyPrefix, loopJob, type SectionContext } from './sections/SectionContext.js';

const RUNNERS: Record<SectionName, (ctx: SectionContext) => Promise<unknown>> = {
  statements: measureStatements,
  overhead: measureOverhead,
  replay: measureReplay,
  client: measureClient,
  storm: measureStorm,
  scale: measureScale,
  budget: measureBudget,
};

const options = parseBenchArgs(process.argv.slice(2), process.env);
const { profile } = options;
const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);
const startedAt = new Date();
let database: BenchDatabase | null = null;
let stopWatching: (() => Promise<OtherDatabases>) | null = null;
const interrupted = (signal: NodeJS.Signals) => {
  log(`${signal}: cleaning up`);
  void Promise.resolve(database?.[Symbol.asyncDispose]()).finally(() => process.exit(130));
};
process.once('SIGINT', interrupted);
process.once('SIGTERM', interrupted);

const sections: Partial<Record<SectionName, unknown>> = {};
let meta: BenchReport['meta'];
try {
  if (options.db === 'postgres') {
    database = await createBenchDatabase(options.serverUrl!);
    log(`database ${database.name} created`);
    // The WAL figures are the whole server's: whatever else writes on it meanwhile counts too.
    stopWatching = await database.watchOtherDatabases();
  }
  if (options.from === 'dist') {
    log("building idem's packages (measured as published: --from=dist) ...");
    await buildPackages();
  }
  const loadEnv = fromEnv(options.from, process.env);
  const serverEnv: Record<string, string> = {
    ...loadEnv,
    ...(database
      ? { BENCH_DB: 'postgres', DATABASE_URL: database.url, POOL_MAX: String(profile.poolMax) }
      : { BENCH_DB: 'pglite' }),
  };
  await using server = await startServer({ ...serverEnv, BENCH_SETUP: '1' });
  await using worker = await startWorker(loadEnv);
  const info = await server.get<{ databaseVersion: string; poolMax: number; idemServer: string }>(
    'info',
  );
  const loaded = /\/dist\/[^/]+\.js$/.test(info.idemServer) ? 'dist' : 'source';
  if (loaded !== options.from) {
    throw new Error(
      `the bench was asked to measure idem from ${options.from} but its server loaded ${info.idemServer}: check NODE_OPTIONS (--conditions=@idem/dist)`,
    );
  }
  meta = {
    profile: profile.name,
    db: options.db,
    from: options.from,
    databaseVersion: info.databaseVersion.replace(/ on .*/, ''),
    poolMax: info.poolMax,
    startedAt: startedAt.toISOString(),
    durationS: 0,
    reps: profile.reps,
    judgedReps: profile.judgedReps,
    warmupMs: profile.warmupMs,
    durationMs: profile.durationMs,
    machine: {
      cpus: cpus().length,
      model: cpus()[0]?.model.trim() ?? 'unknown',
      memoryGiB: Math.round(totalmem() / 2 ** 30),
      os: `${type()} ${release()}`,
      node: process.version,
    },
    loadAverage: { start: loadavg()[0]!, end: 0 },
    otherDatabases: null,
  };
  const ctx: SectionContext = { options, profile, server, worker, database, serverEnv, log };
  log(`warming the server up for ${(2 * profile.serverWarmupMs) / 1000} s ...`);
  for (const path of ['plain.create', 'idem.create']) {
    await worker.run(
      loopJob(ctx, {
        path,
        keys: { kind: 'fresh', prefix: keyPrefix('warm') },
        concurrency: 8,
        warmupMs: 0,
        durationMs: profile.serverWarmupMs,
      }),
      profile.serverWarmupMs + 60_000,
    );
  }
  for (const name of options.sections) {
    const started = performance.now();
    log(`${name} ...`);
    try {
      sections[name] = await RUNNERS[name](ctx);
    } catch (error) {
      sections[name] = {
        error: error instanceof Error ? (error.stack ?? error.message) : String(error),
      };
      log(`${name} FAILED: ${String(error)}`);
    }
    log(`${name} done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  if (stopWatching) {
    meta.otherDatabases = await stopWatching();
    const { rowsWritten, createdOrDropped } = meta.otherDatabases;
    if (rowsWritten > 0 || createdOrDropped > 0) {
      log(
        `WARNING: other databases on this server wrote ${rowsWritten} rows, and ${createdOrDropped} were created or dropped, during the run: the WAL figures include their writes`,
      );
    }
  }
} finally {
  await database?.[Symbol.asyncDispose]();
}

meta.durationS = Math.round((Date.now() - startedAt.getTime()) / 100) / 10;
meta.loadAverage.end = loadavg()[0]!;
const partial = { meta, ...sections } as Omit<BenchReport, 'targets'>;
const report: BenchReport = { ...partial, targets: judgeTargets(partial) };
await mkdir(dirname(options.out), { recursive: true });
const json = `${JSON.stringify(report, null, 2)}\n`;
await writeFile(options.out, json);
if (!process.argv.some((arg) => arg.startsWith('--out'))) {
  await writeFile(join(dirname(options.out), 'latest.json'), json);
}
process.stdout.write(`${printReport(report)}\n\nJSON: ${options.out}\n`);
const failures = Object.values(sections).filter(
  (v) => typeof v === 'object' && v !== null && 'error' in v,
);
process.exit(failures.length > 0 ? 1 : 0);
