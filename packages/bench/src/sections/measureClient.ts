import { DEFAULT_BUDGET_CAPACITY, DEFAULT_RETRY_COST, IDEM_LINK_DEFAULTS } from '@idem/client';
import type { BudgetWave, ClientChainJob, ClosedLoopResult } from '../jobs.js';
import { ratioSpread, spread, type Spread } from '../stats.js';
import { ACCOUNT, summarizeRuns, type RunsSummary, type SectionContext } from './SectionContext.js';

export interface ChainLevel {
  target: ClientChainJob['target'];
  concurrency: number;
  /** One window's length: the chains alternate window by window in one load-generator process. */
  windowMs: number;
  httpLink: RunsSummary;
  idemLink: RunsSummary;
  /** idemLink / httpLink throughput, run by run. */
  throughputRatio: Spread;
  /** idemLink p50 - httpLink p50 in ms, run by run: the link's added cost per call. */
  addedP50Ms: Spread;
  /**
   * The load generator's CPU per call (µs) in each chain's windows: the link's own cost without
   * the server's.
   */
  clientCpuUsPerCall: { httpLink: Spread; idemLink: Spread };
}

export interface BudgetResult {
  calls: number;
  maxAttempts: number;
  backoffBaseMs: number;
  /** What the default bucket pays for in a row: capacity / cost of a retry. */
  budgetRetries: number;
  /** Attempts per logical call, default budget: the first wave (full bucket) and the next. */
  firstWave: Spread;
  nextWave: Spread;
  /** The same calls with a bucket that never runs out: per-call limits only. */
  unlimited: Spread;
  giveUps: Record<string, number>;
  waves: { budget: string; waves: BudgetWave[] }[];
}

export interface ClientResult {
  chains: ChainLevel[];
  budget: BudgetResult;
}

/**
 * The client: (1) the link's cost when nothing fails, the same calls through `[httpLink]` and
 * `[idemLink, httpLink]` in alternating windows of one load-generator process (`runClientChain`),
 * against the idempotent mutation (realistic; `2 * judgedReps` windows per chain, since the target
 * judges it) and `echo` (no database: the link's cost alone; `2 * reps`); (2) the retry budget
 * in an outage, many concurrent logical calls through ONE client while the server answers 503 to
 * everything.
 */
export async function measureClient(ctx: SectionContext): Promise<ClientResult> {
  const chains: ChainLevel[] = [];
  const { warmupMs, durationMs } = ctx.profile;
  // Half a run's length: twice the windows, for the pairs to sit closer together in time.
  const windowMs = Math.max(100, Math.round(durationMs / 2));
  for (const target of ['idem', 'echo'] as const) {
    for (const concurrency of ctx.profile.client.levels) {
      const windows = 2 * (target === 'idem' ? ctx.profile.judgedReps : ctx.profile.reps);
      if (target === 'idem') await ctx.server.post('reset');
      const job: ClientChainJob = {
        kind: 'client-chain',
        url: ctx.server.url,
        target,
        account: ACCOUNT,
        concurrency,
        warmupMs,
        windowMs,
        windows,
      };
      const runs = await ctx.worker.run(job, 2 * warmupMs + 2 * windows * windowMs + 60_000);
      const ratios = ratioSpread(
        runs.idemLink.map((r) => r.throughput),
        runs.httpLink.map((r) => r.throughput),
      );
      const cpu = (r: ClosedLoopResult) => r.cpuUs / r.requests;
      const cpuHttp = spread(runs.httpLink.map(cpu));
      const cpuIdem = spread(runs.idemLink.map(cpu));
      ctx.log(
        `client ${target} c=${concurrency}: ${windows} windows of ${windowMs} ms per chain, idemLink/httpLink ${ratios.median.toFixed(3)} [${ratios.min.toFixed(3)}-${ratios.max.toFixed(3)}], client CPU per call ${cpuHttp.median.toFixed(0)} vs ${cpuIdem.median.toFixed(0)} us`,
      );
      chains.push({
        target,
        concurrency,
        windowMs,
        httpLink: summarizeRuns(runs.httpLink),
        idemLink: summarizeRuns(runs.idemLink),
        throughputRatio: ratios,
        addedP50Ms: spread(
          runs.idemLink.map((r, i) => r.latency.p50 - runs.httpLink[i]!.latency.p50),
        ),
        clientCpuUsPerCall: { httpLink: cpuHttp, idemLink: cpuIdem },
      });
    }
  }
  return { chains, budget: await measureBudget(ctx) };
}

async function measureBudget(ctx: SectionContext): Promise<BudgetResult> {
  const { calls, backoffBaseMs } = ctx.profile.budget;
  const waves: BudgetResult['waves'] = [];
  const giveUps: Record<string, number> = {};
  for (let rep = 0; rep < ctx.profile.reps; rep++) {
    for (const budget of ['default', 'unlimited'] as const) {
      const result = await ctx.worker.run(
        {
          kind: 'budget',
          url: ctx.server.url,
          account: ACCOUNT,
          budget,
          calls,
          waves: budget === 'default' ? 2 : 1,
          backoffBaseMs,
        },
        120_000,
      );
      waves.push({ budget, waves: result });
      for (const wave of result) {
        for (const [because, n] of Object.entries(wave.giveUps)) {
          const name = `${budget}: ${because}`;
          giveUps[name] = (giveUps[name] ?? 0) + n;
        }
      }
      ctx.log(
        `budget ${budget} run ${rep + 1}: attempts per call ${result.map((w) => w.attemptsPerCall.toFixed(2)).join(', then ')}`,
      );
    }
  }
  const perCall = (budget: string, wave: number) =>
    spread(waves.filter((w) => w.budget === budget).map((w) => w.waves[wave]!.attemptsPerCall));
  return {
    calls,
    maxAttempts: IDEM_LINK_DEFAULTS.maxAttempts,
    backoffBaseMs,
    budgetRetries: DEFAULT_BUDGET_CAPACITY / DEFAULT_RETRY_COST,
    firstWave: perCall('default', 0),
    nextWave: perCall('default', 1),
    unlimited: perCall('unlimited', 0),
    giveUps,
    waves,
  };
}
