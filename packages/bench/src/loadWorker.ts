/**
 * The load generator process. Forked by the orchestrator with an IPC channel: it receives one
 * `{ id, job }` at a time, runs it against the bench servers over loopback, and answers
 * `{ id, ok, result }` or `{ id, ok: false, error }`. It exits when the channel closes.
 */
import { Agent } from 'node:http';
import { runBudget, runClientChain } from './clientJobs.js';
import { closedLoop, httpPost, type PostOutcome } from './closedLoop.js';
import type { BurstJob, BurstResult, ClosedLoopJob, ClosedLoopResult, Job } from './jobs.js';
import { summarize } from './stats.js';

async function runClosedLoop(job: ClosedLoopJob): Promise<ClosedLoopResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: job.concurrency });
  const url = new URL(job.url);
  const body = JSON.stringify(job.input);
  const base = { authorization: `Bearer ${job.account}` };
  const keys = job.keys;
  const cpuBefore = process.cpuUsage();
  try {
    const result = await closedLoop({
      concurrency: job.concurrency,
      warmupMs: job.warmupMs,
      ...(job.durationMs !== undefined ? { durationMs: job.durationMs } : {}),
      ...(job.requests !== undefined ? { requests: job.requests } : {}),
      keepSamples: job.keepSamples ?? false,
      call: (n) => {
        const headers =
          keys.kind === 'none'
            ? base
            : {
                ...base,
                'idempotency-key': `${keys.prefix}-${keys.kind === 'cycle' ? n % keys.count : n}`,
                ...(keys.attempt !== undefined
                  ? { 'idempotency-attempt': String(keys.attempt) }
                  : {}),
              };
        return httpPost(agent, url, job.path, body, headers);
      },
    });
    const cpu = process.cpuUsage(cpuBefore);
    return { ...result, keysUsed: result.issued, cpuUs: cpu.user + cpu.system };
  } finally {
    agent.destroy();
  }
}

async function runBurst(job: BurstJob): Promise<BurstResult> {
  // One socket per request, no reuse: the storm is `count` clients arriving at once.
  const agent = new Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
  const urls = job.urls.map((u) => new URL(u));
  const body = JSON.stringify(job.input);
  const headers = {
    authorization: `Bearer ${job.account}`,
    'idempotency-key': job.key,
    ...(job.attempt !== undefined ? { 'idempotency-attempt': String(job.attempt) } : {}),
  };
  const latencies: number[] = [];
  const started = performance.now();
  try {
    const outcomes = await Promise.all(
      Array.from({ length: job.count }, async (_, i): Promise<PostOutcome> => {
        const start = performance.now();
        try {
          return await httpPost(agent, urls[i % urls.length]!, job.path, body, headers, true);
        } catch {
          return { status: 'error', replayed: false, body: null };
        } finally {
          latencies.push(performance.now() - start);
        }
      }),
    );
    const totalMs = performance.now() - started;
    const statuses: Record<string, number> = {};
    for (const o of outcomes) statuses[o.status] = (statuses[o.status] ?? 0) + 1;
    const bodies = new Set(outcomes.filter((o) => o.status === '200').map((o) => o.body));
    return {
      totalMs,
      statuses,
      replayed: outcomes.filter((o) => o.replayed).length,
      distinctBodies: bodies.size,
      latency: summarize(latencies),
    };
  } finally {
    agent.destroy();
  }
}

function run(job: Job): Promise<unknown> {
  switch (job.kind) {
    case 'closed-loop':
      return runClosedLoop(job);
    case 'burst':
      return runBurst(job);
    case 'client-chain':
      return runClientChain(job);
    case 'budget':
      return runBudget(job);
  }
}

process.on('message', (message: { id: number; job: Job }) => {
  run(message.job).then(
    (result) => process.send!({ id: message.id, ok: true, result }),
    (error: unknown) =>
      process.send!({
        id: message.id,
        ok: false,
        error: error instanceof Error ? (error.stack ?? error.message) : String(error),
      }),
  );
});
process.on('disconnect', () => process.exit(0));
