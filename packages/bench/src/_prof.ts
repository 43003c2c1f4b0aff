import { startServer, startWorker } from './processes.js';
import { createBenchDatabase } from './benchDatabase.js';
const path = process.argv[2] ?? 'idem.create';
const out = process.argv[3] ?? '/work/prof/idem.cpuprofile';
const conc = Number(process.argv[4] ?? 8);
const db =
  process.env.BENCH_DB === 'pglite'
    ? null
    : await createBenchDatabase('postgres://postgres@127.0.0.1:5432/postgres');
const env: Record<string, string> = db
  ? { BENCH_DB: 'postgres', DATABASE_URL: db.url, POOL_MAX: '10' }
  : { BENCH_DB: 'pglite' };
if (db) {
  await using setup = await startServer({ ...env, BENCH_SETUP: '1' });
}
{
  await using server = await startServer({ ...env, BENCH_CPU_PROFILE: out });
  await using worker = await startWorker();
  const r = await worker.run(
    {
      kind: 'closed-loop',
      url: server.url,
      path,
      account: 'acct_bench',
      input: { sku: 'bench', quantity: 1 },
      keys: { kind: 'fresh', prefix: 'p' + Date.now() },
      concurrency: conc,
      warmupMs: 2000,
      durationMs: 6000,
    },
    60000,
  );
  console.log(
    path,
    r.throughput.toFixed(0),
    'req/s',
    JSON.stringify(r.statuses),
    'approx total',
    Math.round(r.throughput * 8),
  );
}
await db?.[Symbol.asyncDispose]();
