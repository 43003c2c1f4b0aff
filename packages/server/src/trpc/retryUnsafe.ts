import { initTRPC } from '@trpc/server';
import type { IdemMeta } from '@idem/contract';

const t = initTRPC.context<object>().meta<IdemMeta>().create({ isDev: false });

/**
 * Marks a mutation deliberately retry-unsafe: it takes no key, clients never retry it once sent,
 * and the router audit accepts it as decided. `.concat()` it like idem's procedure builder.
 *
 * @example
 * refund: authed.input(Refund).concat(retryUnsafe('the processor refunds on every call')).mutation(...)
 */
export function retryUnsafe(reason: string) {
  if (reason.trim().length === 0) throw new TypeError('retryUnsafe: give the reason');
  return t.procedure.meta({ retryUnsafe: { reason } });
}
