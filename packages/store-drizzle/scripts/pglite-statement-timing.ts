/*
 * µs per hot-path statement on PGlite, prepared (pglite/preparedRunner.ts) against unprepared
 * (Drizzle's session, `preparedStatements: false`), in one process, alternating rounds; and
 * the store calls they serve (a replay's `read`, a fresh request's `commitWithRecord`).
 *
 *   pnpm --filter @idem/store-drizzle exec tsx scripts/pglite-statement-timing.ts
 */
import { randomUUID } from 'node:crypto';
import { PGlite } from '@electric-sql/pglite';
import { drizzle } from 'drizzle-orm/pglite';
import {
  readLiveTemplate,
  recordOutcomeTemplate,
} from '../src/statements/request/commitStatements.js';
import { databaseClock } from '../src/drizzle/databaseClock.js';
import { drizzleRunner } from '../src/drizzle/executeRows.js';
import { createPgliteStore, migrate } from '../src/pglite/index.js';
import { pglitePreparedRunner } from '../src/pglite/preparedRunner.js';

const ROUNDS = 5;
const PER_ROUND = 400;

const client = new PGlite();
const db = drizzle({ client });
await migrate(db);
const clock = databaseClock(0);
const readLive = readLiveTemplate(clock);
const recordOutcome = recordOutcomeTemplate(clock);
const runners = { unprepared: drizzleRunner, prepared: pglitePreparedRunner(db) };
const stores = {
  unprepared: createPgliteStore(db, { preparedStatements: false }),
  prepared: createPgliteStore(db),
};

const outcome = (keyHash: string) => ({
  scope: 's',
  procedure: 'p',
  keyHash,
  fingerprint: 'f',
  fingerprintVersion: 1,
  operationId: randomUUID(),
  state: 'COMPLETED' as const,
  response: { status: 200, body: '{"ok":true}', replayWindowMs: 60_000, retentionMs: 120_000 },
  lockTimeoutMs: 1000,
});
const outcomeValues = (keyHash: string) => ({
  scope: 's',
  procedure: 'p',
  keyHash,
  fingerprint: 'f',
  fingerprintVersion: 1,
  operationId: randomUUID(),
  state: 'COMPLETED',
  status: 200,
  body: '{"ok":true}',
  replayWindowMs: 60_000,
  retentionMs: 120_000,
  lockTimeout: '1000ms',
});

await stores.prepared.commitWithRecord(async () => ({ value: 0, record: outcome('seed') }));
const seed = { scope: 's', procedure: 'p', keyHash: 'seed' };

type Kind = keyof typeof runners;
const samples: Record<string, Record<Kind, number[]>> = {};
const note = (what: string, kind: Kind, us: number) => {
  samples[what] ??= { unprepared: [], prepared: [] };
  samples[what][kind].push(us);
};

let n = 0;
async function round(kind: Kind) {
  const runner = runners[kind];
  let t = performance.now();
  for (let i = 0; i < PER_ROUND; i++) await runner(db as never, false).run(readLive, seed);
  note('readLive statement', kind, ((performance.now() - t) * 1000) / PER_ROUND);

  let inStatement = 0;
  for (let i = 0; i < PER_ROUND; i++) {
    await db.transaction(async (tx) => {
      const s = performance.now();
      await runner(tx as never, true).run(recordOutcome, outcomeValues(`r${n++}`));
      inStatement += performance.now() - s;
    });
  }
  note('recordOutcome statement', kind, (inStatement * 1000) / PER_ROUND);

  const store = stores[kind];
  t = performance.now();
  for (let i = 0; i < PER_ROUND; i++) await store.read(seed);
  note('store.read (a replay)', kind, ((performance.now() - t) * 1000) / PER_ROUND);

  t = performance.now();
  for (let i = 0; i < PER_ROUND; i++) {
    const key = `c${n++}`;
    await store.read({ scope: 's', procedure: 'p', keyHash: key });
    await store.commitWithRecord(async () => ({ value: 0, record: outcome(key) }));
  }
  note(
    'read + commitWithRecord (a fresh request, no work)',
    kind,
    ((performance.now() - t) * 1000) / PER_ROUND,
  );
}

await round('unprepared'); // warm-up, not counted
await round('prepared');
for (const s of Object.values(samples))
  for (const k of ['unprepared', 'prepared'] as const) s[k] = [];
for (let r = 0; r < ROUNDS; r++) {
  await round('unprepared');
  await round('prepared');
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`PGlite ${PER_ROUND} calls x ${ROUNDS} alternating rounds, median µs per call`);
for (const [what, s] of Object.entries(samples)) {
  const u = median(s.unprepared);
  const p = median(s.prepared);
  console.log(
    `${what.padEnd(52)} unprepared ${u.toFixed(0).padStart(5)}  prepared ${p.toFixed(0).padStart(5)}  (${(u / p).toFixed(2)}x)`,
  );
}
await client.close();
