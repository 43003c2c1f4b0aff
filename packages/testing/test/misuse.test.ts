import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  concurrencyGate,
  failureGate,
  mismatchGate,
  scopeGate,
  startIdemTestApp,
  type IdemTestAppRouter,
  type IdemTestRun,
} from '../src/index.js';
import { ordersApp, ordersPlaced } from './fixtures/ordersApp.js';

describe('a misused gate fails before any request, naming the fix', () => {
  let run: IdemTestRun<IdemTestAppRouter<ReturnType<typeof ordersApp>>>;
  beforeAll(async () => {
    run = await startIdemTestApp(ordersApp(), { servers: 1 });
  });
  afterAll(() => run.close());

  const gate = {
    path: 'orders.create' as const,
    caller: 'alice',
    effect: ordersPlaced,
    input: ({ seed }: { seed: number }) => ({ sku: `sku-${seed}`, quantity: 1 }),
  };

  it('a procedure that is not idempotent, or none at that path', async () => {
    await expect(concurrencyGate(run, { ...gate, path: 'orders.note' } as never)).rejects.toThrow(
      "@idem/testing: the concurrency gate: orders.note is not an idempotent mutation: concatenate idem's procedure (.concat(idem.procedure())) to it",
    );
    await expect(concurrencyGate(run, { ...gate, path: 'orders.gone' } as never)).rejects.toThrow(
      'your router has no procedure orders.gone',
    );
  });

  it('a mismatch gate whose two inputs are equal', async () => {
    await expect(
      mismatchGate(run, { ...gate, input: () => ({ sku: 'same', quantity: 1 }) }),
    ).rejects.toThrow(/needs two different inputs: make `input` depend on its `seed`/);
  });

  it('a scope gate with one caller twice, a failure gate with no failure, one request', async () => {
    await expect(scopeGate(run, { ...gate, otherCaller: 'alice' })).rejects.toThrow(
      /needs an otherCaller other than caller/,
    );
    await expect(failureGate(run, { ...gate })).rejects.toThrow(
      /needs deterministic, transient or both/,
    );
    await expect(concurrencyGate(run, { ...gate, requests: 1 })).rejects.toThrow(
      /at least 2 requests/,
    );
  });

  it('an effect that is not a number', async () => {
    await expect(concurrencyGate(run, { ...gate, effect: async () => Number.NaN })).rejects.toThrow(
      /effect must return a number/,
    );
  });

  it('moves nothing: no request was sent', async () => {
    expect(await ordersPlaced(run.database.db)).toBe(0);
  });
});
