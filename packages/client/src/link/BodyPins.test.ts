/**
 * One key, one body: a retry sends the first attempt's bytes, even when the caller changed the
 * input object while the call was pending (a reactive form edited during a backoff).
 */
import { REQUEST_ID_HEADER } from '@idem/contract';
import { createTRPCClient, httpBatchLink } from '@trpc/client';
import { initTRPC } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ShopRouter } from '../../test/fixtures/shopRouter.js';
import { BodyPins, CallBody } from './BodyPins.js';
import type { IdemFetch } from './idemFetch.js';
import { idemLink } from './idemLink.js';

const URL_ = 'http://idem.test/trpc';
const gateway = () =>
  new Response('<html><h1>502 Bad Gateway</h1></html>', {
    status: 502,
    headers: { 'content-type': 'text/html' },
  });
const ok = (data: unknown) =>
  new Response(JSON.stringify({ result: { data } }), {
    status: 200,
    headers: { 'content-type': 'application/json' },
  });

/** A fetch that answers 502, then 200, recording what each request sent. */
function flakyFetch(onFirst: () => void) {
  const sent: { key: unknown; body: unknown }[] = [];
  const fetch: IdemFetch = async (_url, init) => {
    const headers = init?.headers as Record<string, string>;
    sent.push({ key: headers['Idempotency-Key'], body: init?.body });
    if (sent.length === 1) {
      onFirst();
      return gateway();
    }
    return ok({ orderId: 'order-1', sku: 'tea' });
  };
  return { fetch, sent };
}

describe('a retry sends the first attempt’s body', () => {
  it('even when the caller changes the input between attempt 1 and 2', async () => {
    const input = { sku: 'tea', quantity: 1 };
    const { fetch, sent } = flakyFetch(() => {
      // The form is edited while the call waits for its retry.
      input.quantity = 5;
      input.sku = 'coffee';
    });
    const trpc = createTRPCClient<ShopRouter>({
      links: [
        idemLink<ShopRouter>({
          http: { url: URL_, fetch },
          idempotent: { 'orders.create': true, 'payments.charge': true, 'payments.refuse': true },
          backoff: () => 0,
        }),
        httpBatchLink({ url: URL_, fetch }),
      ],
    });

    await expect(trpc.orders.create.mutate(input)).resolves.toEqual({
      orderId: 'order-1',
      sku: 'tea',
    });
    expect(sent).toHaveLength(2);
    expect(sent[1]?.key).toBe(sent[0]?.key);
    // The first attempt sent the input as it was: nothing copied or serialized ahead of it.
    expect(sent[0]?.body).toBe('{"sku":"tea","quantity":1}');
    expect(sent[1]?.body).toBe(sent[0]?.body);
  });

  it('byte for byte with a transformer and class instances, which a clone would lose', async () => {
    class Money {
      constructor(public cents: number) {}
    }
    // A transformer that knows a class, as superjson does with registered classes.
    const transformer = {
      serialize: (value: unknown) =>
        JSON.parse(
          JSON.stringify(value, function (this: Record<string, unknown>, key) {
            const raw = this[key];
            return raw instanceof Money ? { $money: raw.cents } : raw;
          }),
        ),
      deserialize: (value: unknown) => value,
    };
    const t = initTRPC.create({ transformer });
    const router = t.router({
      pay: t.procedure
        .input(z.object({ amount: z.instanceof(Money) }))
        .errors(({ shape }) => ({
          ...shape,
          data: { ...shape.data, idem: { reason: 'IDEMPOTENCY_KEY_REUSED' as const } },
        }))
        .mutation(() => 'paid'),
    });
    type PayRouter = typeof router;
    const input = { amount: new Money(1_000) };
    const { fetch, sent } = flakyFetch(() => {
      input.amount.cents = 1;
    });
    const trpc = createTRPCClient<PayRouter>({
      links: [
        idemLink<PayRouter>({
          http: { url: URL_, fetch, transformer },
          idempotent: { pay: true },
          backoff: () => 0,
        }),
        httpBatchLink({ url: URL_, fetch, transformer }),
      ],
    });

    await trpc.pay.mutate(input);
    expect(sent[0]?.body).toBe('{"amount":{"$money":1000}}');
    expect(sent[1]?.body).toBe(sent[0]?.body);
  });
});

describe('BodyPins', () => {
  const init = (requestId: string, body: unknown) => ({
    method: 'POST',
    headers: { [REQUEST_ID_HEADER]: requestId },
    body: body as string,
  });

  function recorder() {
    const bodies: unknown[] = [];
    const inner: IdemFetch = async (_url, init) => {
      bodies.push(init?.body);
      return ok(null);
    };
    return { bodies, inner };
  }

  it('keeps a mutable binary body as it was sent, and forgets finished calls', async () => {
    const { bodies, inner } = recorder();
    const pins = new BodyPins();
    const fetch = pins.fetch(inner);
    const call = new CallBody();
    const bytes = new Uint8Array([1, 2, 3]);

    pins.expect(call, 'r1');
    await fetch(URL_, init('r1', bytes));
    bytes[0] = 9;
    pins.expect(call, 'r2');
    await fetch(URL_, init('r2', bytes));
    pins.release(call);

    expect(bodies[0]).toBe(bytes); // the first request sends the caller's own
    expect([...(bodies[1] as Uint8Array)]).toEqual([1, 2, 3]);
    expect(pins.size).toBe(0);
  });

  it('pins at the first request that reaches fetch, and drops attempts that never did', async () => {
    const { bodies, inner } = recorder();
    const pins = new BodyPins();
    const fetch = pins.fetch(inner);
    const call = new CallBody();

    pins.expect(call, 'r1'); // attempt 1 failed before its request was sent
    pins.expect(call, 'r2');
    expect(pins.size).toBe(1);
    await fetch(URL_, init('r2', '{"n":2}'));
    pins.expect(call, 'r3');
    await fetch(URL_, init('r3', '{"n":3}'));
    pins.expect(call, 'r4'); // aborted before its request
    pins.release(call);

    expect(bodies).toEqual(['{"n":2}', '{"n":2}']);
    expect(pins.size).toBe(0);
  });

  it('passes requests it was not told about through untouched', async () => {
    const { bodies, inner } = recorder();
    const fetch = new BodyPins().fetch(inner);
    await fetch(URL_, init('unknown', '{"n":1}'));
    await fetch(URL_, { method: 'POST', body: '{"n":2}' });
    expect(bodies).toEqual(['{"n":1}', '{"n":2}']);
  });
});
