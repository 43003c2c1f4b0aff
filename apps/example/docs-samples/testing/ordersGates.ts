// The usage sample of docs/testing.md (a test file running the gates), verbatim between the
// markers.

// ---- verbatim from docs/testing.md: Usage ----
// orders.idem.test.ts
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, it } from 'vitest';
import {
  clockGate,
  concurrencyGate,
  defineIdemTestApp,
  mismatchGate,
  replayGate,
  scopeGate,
  startIdemTestApp,
  type IdemGateEffectTools,
  type IdemTestAppRouter,
  type IdemTestDb,
  type IdemTestRun,
} from '@idem/testing';
import { createAppRouter } from '../src/createAppRouter.js';

const app = defineIdemTestApp({
  // Your tables, once per run, after idem's own migrations.
  setup: async (db) => {
    await db.execute(sql`create table orders (id serial primary key, sku text, quantity int)`);
  },
  // Your app for one server: the kit gives the database and the key store.
  create: ({ db, store }) => ({
    router: createAppRouter({ db, store }), // createIdempotency({ store, keySecret, scope }) inside
    createContext: ({ caller }) => ({ accountId: caller }), // your context for a caller
  }),
});

const gate = {
  path: 'orders.create',
  caller: 'acct_alice',
  // A new order each time a gate asks: `seed` differs on every call.
  input: ({ seed }: { seed: number }) => ({ sku: `sku-${seed}`, quantity: 1 }),
  // The side effect: one row per execution.
  effect: (_db: IdemTestDb, { count }: IdemGateEffectTools) => count(sql`select 1 from orders`),
} as const;

let run: IdemTestRun<IdemTestAppRouter<typeof app>>;
beforeAll(async () => {
  run = await startIdemTestApp(app, { databaseUrl: process.env.DATABASE_URL }); // PGlite if unset
});
afterAll(() => run.close());

it('one side effect under concurrent duplicates', () => concurrencyGate(run, gate));
it('a reused key with another input is refused', () => mismatchGate(run, gate));
it("another caller's key is its own", () => scopeGate(run, { ...gate, otherCaller: 'acct_bob' }));
it('a retry replays byte for byte', () => replayGate(run, gate));
it('windows and cleanup at their boundaries', () => clockGate(run, gate));
// ---- end ----
