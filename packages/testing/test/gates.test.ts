import { createTestDatabase, postgresAvailable } from '@idem/fixtures';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  clockGate,
  concurrencyGate,
  failureGate,
  mismatchGate,
  replayGate,
  scopeGate,
  startIdemTestApp,
  type IdemTestAppRouter,
  type IdemTestRun,
} from '../src/index.js';
import { ordersApp, ordersPlaced } from './fixtures/ordersApp.js';

const available = await postgresAvailable();

const targets = [
  { name: 'PGlite', skip: false, url: async () => null },
  { name: 'PostgreSQL', skip: !available, url: async () => createTestDatabase('idem_testing') },
];

describe.each(targets)('every gate passes on a correct router on $name', ({ skip, url }) => {
  const downstream = { failNext: 0 };
  let run: IdemTestRun<IdemTestAppRouter<ReturnType<typeof ordersApp>>>;
  let drop = async () => {};
  beforeAll(async () => {
    if (skip) return;
    const database = await url();
    if (database) drop = () => database.drop();
    run = await startIdemTestApp(ordersApp({ downstream, leaseMs: 4_000 }), {
      ...(database ? { databaseUrl: database.url, freshDatabase: false } : {}),
    });
  });
  afterAll(async () => {
    await run?.close();
    await drop();
  });

  const common = {
    caller: 'alice',
    effect: ordersPlaced,
    input: ({ seed }: { seed: number }) => ({ sku: `sku-${seed}`, quantity: 1 + (seed % 5) }),
  };

  it.skipIf(skip)('concurrency: one effect, the rest replays or 409', async () => {
    const report = await concurrencyGate(run, { ...common, path: 'orders.create', requests: 6 });
    expect(report.effectMoved).toBe(1);
    expect(report.answers).toHaveLength(7);
  });

  it.skipIf(skip)('mismatch: 422, the first result kept', async () => {
    await mismatchGate(run, { ...common, path: 'orders.create' });
  });

  it.skipIf(skip)('scope: another caller runs fresh', async () => {
    await scopeGate(run, { ...common, path: 'orders.create', otherCaller: 'bob' });
  });

  it.skipIf(skip)('replay: byte for byte, later too', async () => {
    await replayGate(run, { ...common, path: 'orders.create' });
  });

  it.skipIf(skip)('failure: deterministic stored, transient released', async () => {
    await failureGate(run, {
      ...common,
      path: 'orders.create',
      deterministic: {
        input: ({ seed }) => ({ sku: `gone-${seed}`, quantity: 1, outcome: 'not-found' as const }),
      },
      transient: {
        input: ({ seed }) => ({ sku: `busy-${seed}`, quantity: 1 }),
        before: () => void (downstream.failNext = 1),
      },
    });
  });

  it.skipIf(skip)('clock: window, cleanup (local)', async () => {
    await clockGate(run, { ...common, path: 'orders.create' });
  });

  it.skipIf(skip)('clock: window, cleanup and lease (external)', async () => {
    await clockGate(run, { ...common, path: 'orders.ship' });
  });

  it.skipIf(skip)('replay strategies: a redacted output, no replay at all', async () => {
    for (const path of ['orders.token', 'orders.once'] as const) {
      await concurrencyGate(run, { ...common, path, requests: 4 });
      await replayGate(run, { ...common, path });
      await clockGate(run, { ...common, path });
    }
  });

  it.skipIf(skip)('concurrency on external mode', async () => {
    await concurrencyGate(run, { ...common, path: 'orders.ship' });
  });
});
