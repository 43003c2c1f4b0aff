/**
 * The templates' steps as types: the fetch adapter's options are idem's adapter parameter, and
 * `scope` needs its context annotated.
 */
import { createIdempotency, type IdemAdapterOptions } from '@idem/server';
import type { FetchCreateContextFnOptions } from '@trpc/server/adapters/fetch';
import { expectTypeOf } from 'vitest';
import { store } from '../src/server/db';
import type { ProtectedContext } from '../src/server/trpc';

// The route handler hands `createContext`'s options straight to `createTRPCContext({ idem })`.
expectTypeOf<FetchCreateContextFnOptions>().toExtend<IdemAdapterOptions>();

createIdempotency({
  store,
  // @ts-expect-error unannotated, `ctx` is only idem's part of the context: no `session`
  scope: (ctx) => ctx.session.user.id,
  keySecret: 'a'.repeat(32),
});

createIdempotency({
  store,
  scope: (ctx: ProtectedContext) => ctx.session.user.id,
  keySecret: 'a'.repeat(32),
});
