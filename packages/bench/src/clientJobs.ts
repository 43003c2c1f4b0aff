import { randomUUID } from 'node:crypto';
import { fullJitter, idemLink, RetryBudget, type IdempotentProcedures } from '@idem/client';
import { createTRPCClient, httpLink } from '@trpc/client';
import type { BenchRouter } from './benchApp.js';
import { closedLoop } from './closedLoop.js';
import type { BudgetJob, BudgetWave, ClientChainJob, ClientChainResult } from './jobs.js';

const input = { sku: 'bench', quantity: 1 };

/**
 * The link's cost per call: the same calls through `[httpLink]` (a fresh `Idempotency-Key` and
 * `Idempotency-Attempt: 1` from its `headers`, as an integrator without idem's client would send)
 * and through `[idemLink, httpLink]` (idem makes the key and sends the call itself). `echo` has no
 * database behind it, so the difference is the link alone; `idem` is the realistic case.
 *
 * Both clients live in this one process, built once, and take turns in short windows (A B, B A,
 * A B, ...): a window and its pair's other half run seconds apart, in the same process, on a
 * warm client, so that the machine's drift (steal, a checkpoint, the other processes' GC) hits
 * both alike. With one process per run and 3 s runs, one pair's ratio moved by ±0.15 on two
 * shared cores, three times the 5% the target judges. Each window also records this process's
 * CPU per call, the link's own cost without the server's.
 */
export async function runClientChain(job: ClientChainJob): Promise<ClientChainResult> {
  const url = job.url;
  const auth = { authorization: `Bearer ${job.account}` };
  // `echo` is not idempotent on the server; listing it makes idem send it as one (key included),
  // which is the path whose cost is measured. The cast says so to the compiler.
  const idempotent = {
    'idem.create': true,
    'outage.create': true,
    echo: true,
  } as never as IdempotentProcedures<BenchRouter>;
  const clients = {
    idemLink: createTRPCClient<BenchRouter>({
      links: [
        idemLink<BenchRouter>({ http: { url, headers: auth }, idempotent }),
        httpLink({ url, headers: auth }),
      ],
    }),
    httpLink: createTRPCClient<BenchRouter>({
      links: [
        httpLink({
          url,
          // The headers idem's link would send with a key's first request, so that both
          // chains take the same server path and only the links differ.
          headers: () => ({
            ...auth,
            'Idempotency-Key': randomUUID(),
            'Idempotency-Attempt': '1',
          }),
        }),
      ],
    }),
  };
  const window = async (chain: keyof ClientChainResult, durationMs: number) => {
    const trpc = clients[chain];
    const call =
      job.target === 'echo' ? () => trpc.echo.mutate(input) : () => trpc.idem.create.mutate(input);
    const cpuBefore = process.cpuUsage();
    const result = await closedLoop({
      concurrency: job.concurrency,
      warmupMs: 0,
      durationMs,
      call: async () => {
        await call();
        return { status: '200', replayed: false };
      },
    });
    const cpu = process.cpuUsage(cpuBefore);
    return { ...result, keysUsed: result.issued, cpuUs: cpu.user + cpu.system };
  };

  await window('httpLink', job.warmupMs);
  await window('idemLink', job.warmupMs);
  const runs: ClientChainResult = { httpLink: [], idemLink: [] };
  for (let i = 0; i < job.windows; i++) {
    const order =
      i % 2 === 0 ? (['httpLink', 'idemLink'] as const) : (['idemLink', 'httpLink'] as const);
    for (const chain of order) runs[chain].push(await window(chain, job.windowMs));
  }
  return runs;
}

/**
 * Load amplification in an outage: `calls` concurrent logical calls through ONE client, every
 * attempt answered 503. Attempts are counted by the server; retries and give-ups by the link.
 */
export async function runBudget(job: BudgetJob): Promise<BudgetWave[]> {
  const stats = async () =>
    (await (await fetch(`${job.url}/__bench/stats`)).json()) as { outageHits: number };
  let retries = 0;
  let giveUps: Record<string, number> = {};
  const trpc = createTRPCClient<BenchRouter>({
    links: [
      idemLink<BenchRouter>({
        http: { url: job.url, headers: { authorization: `Bearer ${job.account}` } },
        idempotent: { 'idem.create': true, 'outage.create': true },
        budget: job.budget === 'default' ? new RetryBudget() : new RetryBudget({ capacity: 1e9 }),
        backoff: fullJitter({ baseMs: job.backoffBaseMs }),
        onRetry: () => void (retries += 1),
        onGiveUp: (event) => void (giveUps[event.because] = (giveUps[event.because] ?? 0) + 1),
      }),
      httpLink({ url: job.url }),
    ],
  });
  const waves: BudgetWave[] = [];
  for (let wave = 0; wave < job.waves; wave++) {
    retries = 0;
    giveUps = {};
    const before = (await stats()).outageHits;
    const started = performance.now();
    const outcomes = await Promise.allSettled(
      Array.from({ length: job.calls }, () => trpc.outage.create.mutate(input)),
    );
    const ms = performance.now() - started;
    if (outcomes.some((o) => o.status === 'fulfilled')) throw new Error('an outage call succeeded');
    const attempts = (await stats()).outageHits - before;
    waves.push({
      calls: job.calls,
      attempts,
      attemptsPerCall: attempts / job.calls,
      retries,
      giveUps,
      ms,
    });
  }
  return waves;
}
