import { DEFAULT_BUDGET_CAPACITY, DEFAULT_RETRY_COST, IDEM_LINK_DEFAULTS } from '@idem/client';
import type { BudgetWave, ClientChainJob, ClosedLoopResult } from '../jobs.js';
import { ratioSpread, spread, type Spread } from '../stats.js';
import {
  ACCOUNT,
  jobTimeout,
  summarizeRuns,
  type RunsSummary,
  type SectionContext,
} from './SectionContext.js';

export interface ChainLevel {
  target: ClientChainJob['target'];
  concurrency: number;
  httpLink: RunsSummary;
  idemLink: RunsSummary;
  /** idemLink / httpLink throughput, run by run. */
  throughputRatio: Spread;
  /** idemLink p50 - httpLink p50 in ms, run by run: the link's added cost per call. */
  addedP50Ms: Spread;
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
 * `[idemLink, httpLink]`, alternating, against the idempotent mutation (realistic) and `echo`
 * (no database: the link's cost alone); (2) the retry budget in an outage, many concurrent
 * logical calls through ONE client while the server answers 503 to everything.
 */
export async function measureClient(ctx: SectionContext): Promise<ClientResult> {
  const chains: ChainLevel[] = [];
  for (const target of ['idem', 'echo'] as const) {
    for (const concurrency of ctx.profile.client.levels) {
      const runs: Record<ClientChainJob['chain'], ClosedLoopResult[]> = {
        httpLink: [],
        idemLink: [],
      };
      // The idempotent mutation is what the target judges; `echo` is reported.
      const reps = target === 'idem' ? ctx.profile.judgedReps : ctx.profile.reps;
      for (let rep = 0; rep < reps; rep++) {
        const order =
          rep % 2 === 0 ? (['httpLink', 'idemLink'] as const) : (['idemLink', 'httpLink'] as const);
        for (const chain of order) {
          if (target === 'idem') await ctx.server.post('reset');
          const job: ClientChainJob = {
            kind: 'client-chain',
            url: ctx.server.url,
            chain,
            target,
            account: ACCOUNT,
            concurrency,
            warmupMs: ctx.profile.warmupMs,
            durationMs: ctx.profile.durationMs,
          };
          const result = await ctx.worker.run(job, jobTimeout(ctx));
          runs[chain].push(result);
          ctx.log(
            `client ${target} c=${concurrency} ${chain} run ${rep + 1}: ${result.throughput.toFixed(0)} calls/s, p50 ${result.latency.p50.toFixed(3)} ms`,
          );
        }
      }
      chains.push({
        target,
        concurrency,
        httpLink: summarizeRuns(runs.httpLink),
        idemLink: summarizeRuns(runs.idemLink),
        throughputRatio: ratioSpread(
          runs.idemLink.map((r) => r.throughput),
          runs.httpLink.map((r) => r.throughput),
        ),
        addedP50Ms: spread(
          runs.idemLink.map((r, i) => r.latency.p50 - runs.httpLink[i]!.latency.p50),
        ),
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
