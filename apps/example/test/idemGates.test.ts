/**
 * The example's own procedures through `@idem/testing`, as a team that adopts idem runs them:
 * the real router, context (signed tokens), migrations and stand-in processor, over HTTP, on
 * PGlite and on PostgreSQL.
 */
import { fileURLToPath } from 'node:url';
import { createTestDatabase, postgresAvailable } from '@idem/fixtures';
import {
  clockGate,
  concurrencyGate,
  defineIdemTestApp,
  failureGate,
  mismatchGate,
  replayGate,
  scopeGate,
  startIdemTestApp,
  type IdemGateInputContext,
  type IdemTestAppRouter,
  type IdemTestDb,
  type IdemTestRun,
} from '@idem/testing';
import type { PgliteDatabase } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import type { PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createAppRouter } from '../src/createAppRouter.js';
import { appContext, DEFAULT_TOKEN_SECRET, tokenFor } from '../src/createContext.js';
import { Faults } from '../src/Faults.js';
import { DEFAULT_KEY_SECRET } from '../src/readConfig.js';
import { orders, processorCharges } from '../src/schema.js';
import { StandInProcessor } from '../src/StandInProcessor.js';

const migrationsFolder = fileURLToPath(new URL('../migrations', import.meta.url));
const quiet = () => {};

const app = defineIdemTestApp({
  setup: (db, { kind }) =>
    kind === 'pglite'
      ? migratePglite(db as unknown as PgliteDatabase, { migrationsFolder })
      : migratePostgres(db as unknown as PostgresJsDatabase, { migrationsFolder }),
  create: ({ db, store }) => {
    const { router } = createAppRouter({
      db,
      store,
      processor: new StandInProcessor(db, 0, quiet),
      faults: new Faults(null, 0, quiet),
      log: quiet,
      leaseMs: 3_000,
      keySecret: DEFAULT_KEY_SECRET,
    });
    // The example's own createContext: it reads the signed token in Authorization.
    const context = appContext(DEFAULT_TOKEN_SECRET);
    return { router, createContext: (options) => context(options) };
  },
  callerHeaders: (caller) => ({ authorization: `Bearer ${tokenFor(caller)}` }),
});

/** A new order of the caller, for a payment to pay. */
async function orderToPay({ seed, caller, db }: IdemGateInputContext) {
  const id = `ord_gate${seed}`;
  await db.insert(orders).values({ id, accountId: caller, sku: 'sku-gate', quantity: 1 });
  return { orderId: id, amountCents: 100 + (seed % 900), currency: 'EUR' as const };
}

const ordersPlaced = (db: IdemTestDb) => db.$count(orders);
const charges = (db: IdemTestDb) => db.$count(processorCharges);

const available = await postgresAvailable();

describe.each([
  { where: 'PGlite', skip: false },
  { where: 'PostgreSQL', skip: !available },
])("the example's procedures pass idem's gates on $where", ({ where, skip }) => {
  let run: IdemTestRun<IdemTestAppRouter<typeof app>>;
  let drop = async () => {};
  beforeAll(async () => {
    if (skip) return;
    const database = where === 'PostgreSQL' ? await createTestDatabase('idem_example') : null;
    if (database) drop = () => database.drop();
    run = await startIdemTestApp(
      app,
      database ? { databaseUrl: database.url, freshDatabase: false } : {},
    );
  });
  afterAll(async () => {
    await run?.close();
    await drop();
  });

  const order = {
    path: 'orders.create',
    caller: 'acct_alice',
    input: ({ seed }: IdemGateInputContext) => ({ sku: `sku-${seed}`, quantity: 1 + (seed % 9) }),
    effect: ordersPlaced,
  } as const;
  const payment = {
    path: 'payments.create',
    caller: 'acct_alice',
    input: orderToPay,
    effect: charges,
  } as const;

  it.skipIf(skip)('orders.create: concurrency, reuse, scope, replay, windows', async () => {
    await concurrencyGate(run, order);
    await mismatchGate(run, order);
    await scopeGate(run, { ...order, otherCaller: 'acct_bob' });
    await replayGate(run, order);
    await clockGate(run, order);
  });

  it.skipIf(skip)('payments.create: one charge under concurrent duplicates', async () => {
    await concurrencyGate(run, payment);
  });

  it.skipIf(skip)('payments.create: reuse, scope, replay', async () => {
    await mismatchGate(run, payment);
    await scopeGate(run, { ...payment, otherCaller: 'acct_bob' });
    await replayGate(run, payment);
  });

  it.skipIf(skip)('payments.create: an unknown order is a stored 404', async () => {
    await failureGate(run, {
      ...payment,
      deterministic: {
        input: ({ seed }) => ({
          orderId: `ord_missing${seed}`,
          amountCents: 100,
          currency: 'EUR' as const,
        }),
      },
    });
  });

  it.skipIf(skip)('payments.create: windows, cleanup and the lease taken over', async () => {
    await clockGate(run, payment);
  });
});
