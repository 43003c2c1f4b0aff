import { initTRPC } from '@trpc/server';
import type { TRPCDefaultErrorShape, TRPCProcedureBuilder, TRPCUnsetMarker } from '@trpc/server';
import type { IdemMeta } from '@idem/contract';

/** The tRPC instance of the retry marks: plain meta builders, no middleware. */
export const markPlugin = initTRPC.context<object>().meta<IdemMeta>().create({ isDev: false });

/**
 * The builder a retry mark returns. It adds no middleware: its meta tells the router audit, and
 * its types tell the compiler. `idemRetryDecision` is a context entry for the compiler only
 * (never set at run time): a mark `.concat()`ed after a mark of the other kind, or `retrySafe()`
 * after `idem.procedure()` (whose `ctx.idem` it refuses), does not compile ("Context mismatch").
 * `object &` keeps the expected context from being a weak type, which any context would fail.
 */
export type RetryMarkBuilder<
  TDecision extends 'retry-safe' | 'retry-unsafe',
  TExpected extends object,
  TErrorShape,
> = TRPCProcedureBuilder<
  object & TExpected & { idemRetryDecision?: TDecision },
  IdemMeta,
  { idemRetryDecision?: TDecision },
  TRPCUnsetMarker,
  TRPCUnsetMarker,
  TRPCUnsetMarker,
  TRPCUnsetMarker,
  false,
  TErrorShape
>;

/** What {@link retryUnsafe} returns. */
export type RetryUnsafeProcedureBuilder = RetryMarkBuilder<
  'retry-unsafe',
  object,
  TRPCDefaultErrorShape
>;

/**
 * Marks a mutation deliberately retry-unsafe: it takes no key, clients never retry it once sent,
 * and the router audit accepts it as decided. `.concat()` it like idem's procedure builder.
 * It cannot be combined with `retrySafe()`.
 *
 * @example
 * refund: authed.input(Refund).concat(retryUnsafe('the processor refunds on every call')).mutation(...)
 */
export function retryUnsafe(reason: string): RetryUnsafeProcedureBuilder {
  if (reason.trim().length === 0) throw new TypeError('retryUnsafe: give the reason');
  return markPlugin.procedure.meta({ retryUnsafe: { reason } }) as RetryUnsafeProcedureBuilder;
}
