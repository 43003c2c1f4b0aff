import type { TRPCDefaultErrorShape } from '@trpc/server';
import type { RetrySafeErrorShapeMarker } from '@idem/contract';
import { markPlugin, type RetryMarkBuilder } from './retryUnsafe.js';

/**
 * The error shape `retrySafe()` adds to a mutation in the router type: tRPC's default shape and
 * the compiler-only mark by which the client knows the mutation is safe to retry by nature.
 */
export type RetrySafeErrorShape = TRPCDefaultErrorShape & RetrySafeErrorShapeMarker;

/** What {@link retrySafe} returns. */
export type RetrySafeProcedureBuilder = RetryMarkBuilder<
  'retry-safe',
  { idem?: never },
  RetrySafeErrorShape
>;

/**
 * Marks a mutation safe to retry by nature: running it twice leaves the same state as running it
 * once (delete by id, set a field to a given value), so it needs no idempotency key. It takes no
 * key, the client link retries it like an idempotent mutation (same policy, same failures), and
 * the router audit accepts it as decided. An insert, an increment, a charge or a sent message is
 * never safe by nature: give those `idem.procedure()`. `.concat()` it like idem's procedure
 * builder. It cannot be combined with `idem.procedure()` or `retryUnsafe()`: after either it
 * does not compile, and the router audit (and the completer, at start-up) refuses the mutation.
 *
 * @example
 * remove: authed.input(RemoveItem).concat(retrySafe('deletes by id; a second delete finds nothing')).mutation(...)
 */
export function retrySafe(reason: string): RetrySafeProcedureBuilder {
  if (reason.trim().length === 0) throw new TypeError('retrySafe: give the reason');
  return markPlugin.procedure.meta({ retrySafe: { reason } }) as RetrySafeProcedureBuilder;
}
