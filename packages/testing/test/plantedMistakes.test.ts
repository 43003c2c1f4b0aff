import { createTestDatabase, postgresAvailable } from '@idem/fixtures';
import { describe, expect, it } from 'vitest';
import {
  concurrencyGate,
  failureGate,
  isIdemGateError,
  replayGate,
  scopeGate,
  startIdemTestApp,
  type IdemGateError,
  type StartIdemTestAppOptions,
} from '../src/index.js';
import { ordersApp, ordersPlaced, type Mistake } from './fixtures/ordersApp.js';

const available = await postgresAvailable();

const common = {
  path: 'orders.create' as const,
  caller: 'alice',
  effect: ordersPlaced,
  input: ({ seed }: { seed: number }) => ({ sku: `sku-${seed}`, quantity: 1 }),
};

/** Runs `gate` on a router with `mistake` planted and returns the gate's error. */
async function caught(
  where: 'PGlite' | 'PostgreSQL',
  mistake: Mistake,
  gate: (run: Awaited<ReturnType<typeof start>>) => Promise<unknown>,
): Promise<IdemGateError> {
  await using database = where === 'PostgreSQL' ? await createTestDatabase('idem_testing') : null;
  await using run = await start(mistake, {
    ...(database ? { databaseUrl: database.url, freshDatabase: false } : {}),
    // A procedure that deadlocks PGlite never answers: a short wait is enough to see it.
    requestTimeoutMs: 3_000,
  });
  const error = await gate(run).then(
    () => null,
    (thrown: unknown) => thrown,
  );
  expect(isIdemGateError(error), String(error)).toBe(true);
  return error as IdemGateError;
}

const start = (mistake: Mistake | undefined, options: StartIdemTestAppOptions) =>
  startIdemTestApp(ordersApp(mistake ? { mistake } : {}), options);

describe.each([
  { where: 'PGlite' as const, skip: false },
  { where: 'PostgreSQL' as const, skip: !available },
])('the kit catches a planted mistake on $where', ({ where, skip }) => {
  it.skipIf(skip)('a write on the outer database instead of ctx.idem.tx', async () => {
    const error = await caught(where, 'outer-db-write', (run) =>
      concurrencyGate(run, { ...common, requests: 4 }),
    );
    expect(error.gate).toBe('concurrency');
    expect(error.message).toContain('ctx.idem.tx');
    if (where === 'PGlite') {
      // PGlite runs one transaction at a time: the outer write waits for the one it is in.
      expect(error.actual).toMatch(/no answer/);
      expect(error.likelyCause).toMatch(/PGlite runs one transaction at a time/);
    } else {
      // PostgreSQL commits the outer write of every duplicate that ran its handler, the losers'
      // included: idem runs one per key and server at a time, and the kit lets the two servers'
      // reach their commit together.
      expect(error.actual).toBe('it moved by 2');
      expect(error.likelyCause).toMatch(/going around `ctx.idem.tx`/);
    }
  });

  it.skipIf(skip)('a write on the outer database, with the key claimed first', async () => {
    const downstream = { failNext: 0 };
    await using database = where === 'PostgreSQL' ? await createTestDatabase('idem_testing') : null;
    const options = {
      ...(database ? { databaseUrl: database.url, freshDatabase: false } : {}),
      requestTimeoutMs: 3_000,
    };
    await using run = await startIdemTestApp(
      ordersApp({ mistake: 'outer-db-write', claim: 'first', downstream }),
      options,
    );
    const error = await failureGate(run, {
      ...common,
      transient: { input: common.input, before: () => void (downstream.failNext = 1) },
    }).then(
      () => null,
      (thrown: unknown) => thrown as IdemGateError,
    );
    expect(isIdemGateError(error), String(error)).toBe(true);
    expect(error!.message).toContain('ctx.idem.tx');
  });

  it.skipIf(skip)('a write on the outer database that a failed attempt leaves behind', async () => {
    const downstream = { failNext: 0 };
    await using database = where === 'PostgreSQL' ? await createTestDatabase('idem_testing') : null;
    await using run = await startIdemTestApp(ordersApp({ mistake: 'outer-db-write', downstream }), {
      ...(database ? { databaseUrl: database.url, freshDatabase: false } : {}),
      requestTimeoutMs: 3_000,
      servers: 1,
    });
    const error = await failureGate(run, {
      ...common,
      transient: { input: common.input, before: () => void (downstream.failNext = 1) },
    }).then(
      () => null,
      (thrown: unknown) => thrown as IdemGateError,
    );
    expect(isIdemGateError(error)).toBe(true);
    expect(error!.gate).toBe('failure');
    if (where === 'PostgreSQL') {
      expect(error!.expected).toMatch(/a failed local-mode attempt: no effect/);
      expect(error!.actual).toBe('the effect moved by 1');
    }
    expect(error!.message).toContain('ctx.idem.tx');
  });

  it.skipIf(skip)('a handler that reads the clock into its output', async () => {
    const error = await caught(where, 'clock-in-output', (run) => replayGate(run, common));
    expect(error.gate).toBe('replay');
    expect(error.expected).toMatch(/byte for byte/);
    expect(error.actual).toMatch(/differing at character \d+/);
    expect(error.likelyCause).toMatch(/reading the clock/);
  });

  it.skipIf(skip)('a scope that ignores the caller', async () => {
    const error = await caught(where, 'global-scope', (run) =>
      scopeGate(run, { ...common, otherCaller: 'bob' }),
    );
    expect(error.gate).toBe('scope');
    expect(error.likelyCause).toMatch(
      /`scope` in createIdempotency must come from the authenticated caller/,
    );
  });

  it.skipIf(skip)('and the same gates pass once the mistake is gone', async () => {
    {
      // Claimed first: the duplicates wait for the first transaction, none runs its handler.
      await using database =
        where === 'PostgreSQL' ? await createTestDatabase('idem_testing') : null;
      await using run = await startIdemTestApp(ordersApp({ claim: 'first' }), {
        ...(database ? { databaseUrl: database.url, freshDatabase: false } : {}),
      });
      await concurrencyGate(run, { ...common, requests: 4 });
    }
    await using database = where === 'PostgreSQL' ? await createTestDatabase('idem_testing') : null;
    await using run = await start(undefined, {
      ...(database ? { databaseUrl: database.url, freshDatabase: false } : {}),
    });
    await concurrencyGate(run, { ...common, requests: 4 });
    await replayGate(run, common);
    await scopeGate(run, { ...common, otherCaller: 'bob' });
  });
});

it('prints what a failed gate says', async () => {
  const error = await caught('PGlite', 'global-scope', (run) =>
    scopeGate(run, { ...common, otherCaller: 'bob' }),
  );
  expect(error.message.split('\n').slice(0, 4)).toEqual([
    'idem scope gate failed for orders.create',
    "  expected: bob with alice's key: a fresh execution of its own",
    expect.stringMatching(/^ {2}got: {6}server 1: 422 IDEMPOTENCY_KEY_REUSED \{"error"/),
    expect.stringMatching(/^ {2}likely: {3}bob met alice's record: `scope` in createIdempotency/),
  ]);
});
