import type { OtherDatabases } from './benchDatabase.js';
import type { BudgetResult } from './sections/measureBudget.js';
import type { ClientResult } from './sections/measureClient.js';
import type { OverheadLevel } from './sections/measureOverhead.js';
import type { ReplayLevel } from './sections/measureReplay.js';
import type { ScaleResult } from './sections/measureScale.js';
import type { StatementsResult } from './sections/measureStatements.js';
import type { StormResult } from './sections/measureStorm.js';

/** The machine and database a run was measured on. */
export interface BenchMeta {
  profile: 'full' | 'smoke';
  db: 'postgres' | 'pglite';
  /**
   * What idem was measured from: its built packages, as users run them, or its TypeScript sources
   * through tsx (`builtPackages.ts`).
   */
  from: 'dist' | 'source';
  databaseVersion: string;
  /** postgres.js connections per server process (PGlite: one in-process connection). */
  poolMax: number;
  startedAt: string;
  durationS: number;
  /** Runs per measurement the targets do not judge (`BenchProfile.reps`). */
  reps: number;
  /** Runs of each comparison the targets judge (`BenchProfile.judgedReps`). */
  judgedReps: number;
  warmupMs: number;
  durationMs: number;
  machine: { cpus: number; model: string; memoryGiB: number; os: string; node: string };
  /** 1-minute load average when the run started and when it ended: others' work on the machine. */
  loadAverage: { start: number; end: number };
  /**
   * What the PostgreSQL server's other databases did during the run; null on PGlite. The WAL
   * figures are the whole server's, so they are idem's alone only when both numbers are 0.
   */
  otherDatabases: OtherDatabases | null;
}

/** One target, judged on this run's medians (`judgeTargets.ts`). */
export interface TargetResult {
  id: string;
  target: string;
  value: string;
  /** null: not judged: not measured in this run (the reason in `value`), or `reported`. */
  met: boolean | null;
  /** A number the bench reports next to the targets without judging it (`met` is null). */
  reported?: true;
  /**
   * Targets judged on the median of a ratio's runs (throughput, replay, the full table, the
   * reaper, the link): false when the interval of the median (`medianInterval`) holds the
   * threshold, so that a run of the same code may well be judged the other way; absent with fewer
   * than 5 runs, and for targets that are not ratios.
   */
  settled?: boolean;
}

/** What `pnpm bench` writes as JSON. A section that failed holds `{ error }`. */
export interface BenchReport {
  meta: BenchMeta;
  statements?: StatementsResult | { error: string };
  overhead?: OverheadLevel[] | { error: string };
  replay?: ReplayLevel[] | { error: string };
  client?: ClientResult | { error: string };
  storm?: StormResult | { error: string };
  scale?: ScaleResult | { error: string };
  budget?: BudgetResult | { error: string };
  targets: TargetResult[];
}

export function isError(value: unknown): value is { error: string } {
  return typeof value === 'object' && value !== null && 'error' in value;
}
