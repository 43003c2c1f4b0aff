import { fileURLToPath } from 'node:url';
import type { BenchFrom } from './builtPackages.js';

export const SECTIONS = [
  'statements',
  'overhead',
  'replay',
  'client',
  'storm',
  'scale',
  'budget',
] as const;
export type SectionName = (typeof SECTIONS)[number];

/** How big each measurement is: the full run, or the smoke run CI uses so the bench never rots. */
export interface BenchProfile {
  name: 'full' | 'smoke';
  /** Runs per measurement; medians and min/max are over these. */
  reps: number;
  warmupMs: number;
  durationMs: number;
  /**
   * Traffic (not recorded) that the main server gets once before the first section, per
   * variant: JIT, connection pool and database caches warm, so the first section is not the cold one.
   */
  serverWarmupMs: number;
  /** Connections of the overhead comparison. */
  levels: number[];
  /**
   * Runs of each comparison whose medians the targets judge: the overhead comparison (per
   * variant and level), replay against fresh, idemLink against httpLink on the idempotent
   * mutation, fresh claims on the full table against the empty one, and the foreground's p99
   * while the reaper runs against without. More than `reps`, because on two shared cores one
   * run's ratio moves by ±0.2 (two runs of 5 gave 0.78 and 0.84 at 32 connections, the 10
   * together 0.83; three runs of the full-table ratio spread from 0.72 to 1.27).
   */
  judgedReps: number;
  replayLevels: number[];
  /** Sequential requests per kind in the statement count. */
  statementRequests: number;
  /** Connections of each server's postgres.js pool. */
  poolMax: number;
  storm: { requests: number; reps: number };
  /**
   * The key table at scale, per database: rows, and the share of them already expired (enough
   * that the reaper, run after run, is still busy when a run's foreground traffic ends).
   */
  scale: {
    rows: { postgres: number; pglite: number };
    expiredShare: { postgres: number; pglite: number };
    concurrency: number;
  };
  client: { levels: number[] };
  /** The client's retry budget (the `client` section). */
  budget: { calls: number; backoffBaseMs: number };
  /**
   * The per-request CPU budget (the `budget` section): connections, profiled windows of
   * `durationMs` per variant (after `serverWarmupMs` of warm-up), and V8's sampling interval.
   */
  cpuBudget: { concurrency: number; windows: number; samplingIntervalUs: number };
}

export const FULL: BenchProfile = {
  name: 'full',
  reps: 3,
  warmupMs: 1_000,
  durationMs: 3_000,
  serverWarmupMs: 5_000,
  levels: [1, 8, 32],
  judgedReps: 8,
  replayLevels: [1, 8],
  statementRequests: 200,
  poolMax: 10,
  storm: { requests: 1_000, reps: 3 },
  scale: {
    rows: { postgres: 1_000_000, pglite: 200_000 },
    expiredShare: { postgres: 0.3, pglite: 0.9 },
    concurrency: 8,
  },
  client: { levels: [1, 32] },
  budget: { calls: 1_000, backoffBaseMs: 500 },
  cpuBudget: { concurrency: 8, windows: 3, samplingIntervalUs: 500 },
};

export const SMOKE: BenchProfile = {
  name: 'smoke',
  reps: 2,
  warmupMs: 100,
  durationMs: 250,
  serverWarmupMs: 200,
  levels: [1, 8, 32],
  judgedReps: 2,
  replayLevels: [8],
  statementRequests: 20,
  poolMax: 10,
  storm: { requests: 100, reps: 2 },
  scale: {
    rows: { postgres: 5_000, pglite: 5_000 },
    expiredShare: { postgres: 0.3, pglite: 0.3 },
    concurrency: 8,
  },
  client: { levels: [8] },
  budget: { calls: 50, backoffBaseMs: 5 },
  cpuBudget: { concurrency: 8, windows: 1, samplingIntervalUs: 500 },
};

export interface BenchOptions {
  db: 'postgres' | 'pglite';
  /** The PostgreSQL server to create the bench database on (any database of it). */
  serverUrl: string | null;
  /** Where the JSON goes; `latest.json` beside it too when it is the default folder. */
  out: string;
  profile: BenchProfile;
  sections: SectionName[];
  /** What idem is measured from: its built packages (default) or its sources (`builtPackages.ts`). */
  from: BenchFrom;
}

const USAGE = `usage: pnpm bench [--smoke] [--db=pglite|postgres] [--only=${SECTIONS.join(',')}] [--out=file.json] [--from=dist|source]

  PostgreSQL when DATABASE_URL is set (a fresh database is created on that server and dropped
  after), else PGlite in each server process. --db=postgres without DATABASE_URL uses
  IDEM_TEST_ADMIN_URL or postgres://postgres@127.0.0.1:5432/postgres.

  --from=dist (the default) builds idem's packages first and measures them as they are published
  (dist/, plain JavaScript); --from=source measures the TypeScript sources through tsx, as the
  tests run them, which costs idem's code more per request than users pay (comparison only).`;

export function parseBenchArgs(argv: string[], env: NodeJS.ProcessEnv): BenchOptions {
  const flags = new Map<string, string>();
  for (const arg of argv) {
    if (arg === '--') continue;
    const match = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (!match) throw new Error(`unknown argument ${arg}\n${USAGE}`);
    flags.set(match[1]!, match[2] ?? 'true');
  }
  for (const name of flags.keys()) {
    if (!['smoke', 'db', 'only', 'out', 'from', 'help'].includes(name)) {
      throw new Error(`unknown flag --${name}\n${USAGE}`);
    }
  }
  if (flags.has('help')) {
    console.log(USAGE);
    process.exit(0);
  }
  const db = (flags.get('db') ?? (env.DATABASE_URL ? 'postgres' : 'pglite')) as BenchOptions['db'];
  if (db !== 'postgres' && db !== 'pglite')
    throw new Error(`--db must be pglite or postgres\n${USAGE}`);
  const serverUrl =
    db === 'postgres'
      ? (env.DATABASE_URL ??
        env.IDEM_TEST_ADMIN_URL ??
        'postgres://postgres@127.0.0.1:5432/postgres')
      : null;
  const only = flags.get('only')?.split(',') ?? [...SECTIONS];
  for (const name of only) {
    if (!SECTIONS.includes(name as SectionName))
      throw new Error(`unknown section ${name}\n${USAGE}`);
  }
  const from = (flags.get('from') ?? 'dist') as BenchFrom;
  if (from !== 'dist' && from !== 'source')
    throw new Error(`--from must be dist or source\n${USAGE}`);
  const profile = flags.has('smoke') ? SMOKE : FULL;
  const out =
    flags.get('out') ??
    fileURLToPath(new URL(`../../../bench-results/${db}-${profile.name}.json`, import.meta.url));
  return { db, serverUrl, out, profile, sections: only as SectionName[], from };
}
