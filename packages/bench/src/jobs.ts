import type { LatencySummary } from './stats.js';

/** Which `Idempotency-Key` each request of a run sends. */
export type KeyPlan =
  /** No key header. */
  | { kind: 'none' }
  /** `${prefix}-${n}` with n = 0, 1, 2, ... : a new key for every request. */
  | { kind: 'fresh'; prefix: string; attempt?: number }
  /** `${prefix}-${n}` with n cycling through 0 .. count-1: replays of an earlier fresh run. */
  | { kind: 'cycle'; prefix: string; count: number; attempt?: number };

/**
 * The `Idempotency-Attempt` idem's client link sends: 1 with a key's first request, 2 and up with
 * its retries. A raw HTTP client sends none (`attempt` left out).
 */
export const FIRST_ATTEMPT = 1;
export const RETRY_ATTEMPT = 2;

/** A closed loop: `concurrency` connections, each sending its next request when one returns. */
export interface ClosedLoopJob {
  kind: 'closed-loop';
  url: string;
  /** The tRPC path, e.g. `idem.create`. */
  path: string;
  account: string;
  input: unknown;
  keys: KeyPlan;
  concurrency: number;
  /** Requests before measuring, not recorded. */
  warmupMs: number;
  /** Measure for this long, or ... */
  durationMs?: number;
  /** ... for exactly this many requests (then there is no warm-up). */
  requests?: number;
  /** Return each request's start (epoch ms) and latency, for windowed percentiles. */
  keepSamples?: boolean;
}

export interface ClosedLoopResult {
  /** Requests measured (after warm-up). */
  requests: number;
  /** Keys used by the whole run, warm-up included (for a later `cycle`). */
  keysUsed: number;
  elapsedMs: number;
  /** Measured requests per second. */
  throughput: number;
  latency: LatencySummary;
  /** Measured responses by HTTP status; `error` for a failed connection. */
  statuses: Record<string, number>;
  /** Measured responses carrying `Idempotent-Replayed: true`. */
  replayed: number;
  /** Pairs of [start epoch ms, latency ms], when asked for. */
  samples?: [number, number][];
  /** CPU time (user + system, all threads) the load generator spent on the whole run, in µs. */
  cpuUs: number;
}

/** Every request at once: the same key, spread round-robin over `urls`, one socket each. */
export interface BurstJob {
  kind: 'burst';
  urls: string[];
  path: string;
  account: string;
  input: unknown;
  key: string;
  /** The `Idempotency-Attempt` every request sends; none when left out (a raw HTTP client). */
  attempt?: number;
  count: number;
}

export interface BurstResult {
  totalMs: number;
  statuses: Record<string, number>;
  replayed: number;
  /** How many different bodies the 200 answers carried (1: every replay is the original). */
  distinctBodies: number;
  latency: LatencySummary;
}

/**
 * The same calls through `[httpLink]` and `[idemLink, httpLink]`, in ONE load-generator process
 * with both clients built once, in alternating windows (see `runClientChain`).
 */
export interface ClientChainJob {
  kind: 'client-chain';
  url: string;
  /** `idem.create` (database, idempotent) or `echo` (no database). */
  target: 'idem' | 'echo';
  account: string;
  concurrency: number;
  /** Traffic through each chain before the first window (not recorded). */
  warmupMs: number;
  /** One window's length. */
  windowMs: number;
  /** Windows per chain: pairs, the order alternating pair by pair. */
  windows: number;
}

/** Each chain's windows, in order: window i of one chain ran right next to window i of the other. */
export type ClientChainResult = Record<'httpLink' | 'idemLink', ClosedLoopResult[]>;

/** Logical calls through ONE idem client against a server that answers 503 to all of them. */
export interface BudgetJob {
  kind: 'budget';
  url: string;
  account: string;
  /** `default`: `new RetryBudget()`; `unlimited`: a bucket too large to run out. */
  budget: 'default' | 'unlimited';
  /** Concurrent logical calls per wave; waves run one after another on the same client. */
  calls: number;
  waves: number;
  /** Full-jitter base in ms (the link's default is 500). */
  backoffBaseMs: number;
}

export interface BudgetWave {
  calls: number;
  /** Requests the server received (counted by the server). */
  attempts: number;
  attemptsPerCall: number;
  /** Retries the link reported through `onRetry`. */
  retries: number;
  giveUps: Record<string, number>;
  ms: number;
}

export type Job = ClosedLoopJob | BurstJob | ClientChainJob | BudgetJob;
export type JobResult<J extends Job> = J extends ClosedLoopJob
  ? ClosedLoopResult
  : J extends BurstJob
    ? BurstResult
    : J extends ClientChainJob
      ? ClientChainResult
      : BudgetWave[];
