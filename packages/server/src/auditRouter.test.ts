import { initTRPC } from '@trpc/server';
import type { IdemMeta, IdempotencyStore } from '@idem/contract';
import { describe, expect, it } from 'vitest';
import { assertRouterDecided, auditRouter } from './auditRouter.js';
import { createIdempotency } from './createIdempotency.js';
import type { IdemContext } from './idemContext.js';
import { retryUnsafe } from './retryUnsafe.js';

type Ctx = IdemContext & { account: string };
const t = initTRPC.context<Ctx>().meta<IdemMeta>().create();
// The audit reads procedure meta only; it never calls the store (external mode only checks that
// the store has recovery support).
const store = { saveSteps: () => Promise.resolve(true) } as unknown as IdempotencyStore<unknown>;
const idem = createIdempotency({ store, scope: (ctx: Ctx) => ctx.account });

const router = t.router({
  orders: t.router({
    create: t.procedure.concat(idem.procedure()).mutation(() => 1),
    cancel: t.procedure.concat(retryUnsafe('cancels downstream on every call')).mutation(() => 1),
    rename: t.procedure.mutation(() => 1),
    list: t.procedure.query(() => []),
  }),
  mail: t.router({
    send: t.procedure.concat(idem.procedure({ mode: 'external' })).mutation(() => 1),
  }),
});

describe('auditRouter', () => {
  it('lists every mutation with its decision, and the undecided ones', () => {
    expect(auditRouter(router)).toEqual({
      mutations: [
        { path: 'mail.send', decision: 'idempotent' },
        { path: 'orders.cancel', decision: 'retry-unsafe' },
        { path: 'orders.create', decision: 'idempotent' },
        { path: 'orders.rename', decision: 'undecided' },
      ],
      undecided: ['orders.rename'],
    });
  });

  it('fails a test on an undecided mutation, naming it', () => {
    expect(() => assertRouterDecided(router)).toThrow(/orders\.rename/);
    expect(() =>
      assertRouterDecided(t.router({ a: t.procedure.concat(idem.procedure()).mutation(() => 1) })),
    ).not.toThrow();
  });

  it('refuses external mode on a store without recovery support', () => {
    const plain = createIdempotency({
      store: {} as IdempotencyStore<unknown>,
      scope: (ctx: Ctx) => ctx.account,
    });
    expect(() => plain.procedure({ mode: 'external' })).toThrow(/recovery support/);
    expect(() => plain.procedure()).not.toThrow();
  });

  it('refuses retryUnsafe without a reason and createIdempotency without a scope', () => {
    expect(() => retryUnsafe(' ')).toThrow(TypeError);
    expect(() =>
      createIdempotency({ store: {} as IdempotencyStore<unknown>, scope: undefined as never }),
    ).toThrow(/scope/);
  });

  it('refuses a retention shorter than the replay window', () => {
    expect(() => idem.procedure({ replayWindowMs: 10_000, retentionMs: 5_000 })).toThrow(
      /retentionMs/,
    );
  });
});
