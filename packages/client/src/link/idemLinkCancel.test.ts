/**
 * How the link cancels idem's own requests. They carry no attempt signal of their own (see
 * `idemLink`): a timed-out or unsubscribed attempt is cancelled by unsubscribing from the
 * transport, and these tests check that the request's fetch is still aborted either way.
 */
import type { Operation } from '@trpc/client';
import { setImmediate as macrotask } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { ShopRouter } from '../../test/fixtures/shopRouter.js';
import { VirtualClock } from '../../test/fixtures/VirtualClock.js';
import { isIdemClientError } from '../errors/IdemClientError.js';
import { idemLink } from './idemLink.js';

type Fetched = { url: string; init: RequestInit };

function setup(
  answer: (init: RequestInit) => Promise<Response>,
  headers?: () => Record<string, string> | Promise<Record<string, string>>,
  signal: AbortSignal | null = null,
) {
  const clock = new VirtualClock();
  const fetched: Fetched[] = [];
  const link = idemLink<ShopRouter>({
    http: {
      url: 'http://idem.test',
      ...(headers ? { headers } : {}),
      fetch: (url, init) => {
        fetched.push({ url: String(url), init: init as RequestInit });
        return answer(init as RequestInit);
      },
    },
    idempotent: { 'orders.create': true, 'payments.charge': true, 'payments.refuse': true },
    clock,
    maxAttempts: 1,
    attemptTimeoutMs: 1_000,
  })({});
  const op: Operation = {
    id: 1,
    type: 'mutation',
    path: 'orders.create',
    input: { n: 1 },
    context: {},
    signal,
  };
  const events: unknown[] = [];
  const subscribe = () =>
    link({
      op,
      next: () => {
        throw new Error('an idempotent mutation must not go down the chain');
      },
    }).subscribe({
      next: (envelope) => events.push(['next', envelope]),
      error: (error) => events.push(['error', error]),
      complete: () => events.push(['complete']),
    });
  return { clock, fetched, events, subscribe };
}

const hang = () => new Promise<never>(() => {});

async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await macrotask();
}

describe('idemLink cancellation', () => {
  it('aborts the fetch of an attempt that times out', async () => {
    const { clock, fetched, events, subscribe } = setup(hang);
    const done = new Promise<void>((resolve) => {
      subscribe();
      const check = () => (events.length > 0 ? resolve() : void setImmediate(check));
      check();
    });
    await clock.run(done);
    expect(fetched).toHaveLength(1);
    expect(fetched[0]?.init.signal?.aborted).toBe(true);
    const [kind, error] = events[0] as [string, { cause?: unknown }];
    expect(kind).toBe('error');
    expect(isIdemClientError(error.cause) && error.cause.code).toBe('ATTEMPTS_EXHAUSTED');
  });

  it('aborts the fetch when tRPC unsubscribes mid-call, and delivers nothing', async () => {
    const { fetched, events, subscribe } = setup(hang);
    const subscription = subscribe();
    await settle();
    expect(fetched).toHaveLength(1);
    expect(fetched[0]?.init.signal?.aborted).toBe(false);
    subscription.unsubscribe();
    await settle();
    expect(fetched[0]?.init.signal?.aborted).toBe(true);
    expect(fetched).toHaveLength(1);
    expect(events).toEqual([]);
  });

  it("aborts the fetch when the caller's signal aborts mid-call, and delivers the caller's reason", async () => {
    const caller = new AbortController();
    const { fetched, events, subscribe } = setup(hang, undefined, caller.signal);
    subscribe();
    await settle();
    expect(fetched[0]?.init.signal?.aborted).toBe(false);
    caller.abort(new Error('the user left'));
    await settle();
    expect(fetched[0]?.init.signal?.aborted).toBe(true);
    expect(events).toHaveLength(1);
    const [kind, error] = events[0] as [string, Error];
    expect(kind).toBe('error');
    expect(error.message).toContain('the user left');
  });

  it('delivers a success and leaves its request alone', async () => {
    const { fetched, events, subscribe } = setup(async () =>
      Response.json({ result: { data: 'ok' } }),
    );
    subscribe();
    await settle();
    expect(events.map((e) => (e as unknown[])[0])).toEqual(['next', 'complete']);
    expect(events[0]).toMatchObject(['next', { result: { data: 'ok' } }]);
    expect(fetched[0]?.init.signal?.aborted).toBe(false);
  });
});

describe('idemLink headers', () => {
  const ok = async () => Response.json({ result: { data: 'ok' } });

  it.each([
    ['a synchronous', () => ({ authorization: 'Bearer t', 'Idempotency-Key': 'stale' })],
    ['an async', async () => ({ authorization: 'Bearer t', 'Idempotency-Key': 'stale' })],
  ])('merges %s headers function with its own, its own winning', async (_, headers) => {
    const { fetched, events, subscribe } = setup(ok, headers);
    subscribe();
    await settle();
    expect(events.map((e) => (e as unknown[])[0])).toEqual(['next', 'complete']);
    const sent = fetched[0]?.init.headers as Record<string, string>;
    expect(sent['authorization']).toBe('Bearer t');
    expect(Object.keys(sent).filter((name) => /^idempotency-key$/i.test(name))).toEqual([
      'Idempotency-Key',
    ]);
    expect(sent['Idempotency-Key']).not.toBe('stale');
    expect(sent['Idempotency-Attempt']).toBe('1');
  });
});
