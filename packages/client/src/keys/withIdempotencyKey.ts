import { isIdempotencyKey } from '@idem/contract';
import type { TRPCProcedureOptions } from '@trpc/client';
import { IdemClientError } from '../errors/IdemClientError.js';

/** The `op.context` field that carries a caller's own key. */
export const IDEMPOTENCY_KEY_CONTEXT = 'idempotencyKey';

/**
 * Call options that give one call its own idempotency key: the recommended tier, a key derived
 * from the event that caused the call, so a retry (or a restart that replays the pending
 * action) cannot forget it.
 *
 * ```ts
 * await trpc.orders.create.mutate(input, withIdempotencyKey(`order-confirm-${orderId}`));
 * await trpc.orders.create.mutate(input, withIdempotencyKey(key, { signal }));
 * ```
 *
 * Same as `{ context: { idempotencyKey: key } }`, plus a check of the key format (1 to 255
 * visible ASCII characters) that throws an {@link IdemClientError} `INVALID_KEY` here, at the
 * call site. Ignored by mutations that are not idempotent and by queries.
 */
export function withIdempotencyKey(
  key: string,
  options: TRPCProcedureOptions = {},
): TRPCProcedureOptions {
  assertIdempotencyKey(key, 'withIdempotencyKey');
  return { ...options, context: { ...options.context, [IDEMPOTENCY_KEY_CONTEXT]: key } };
}

/** Throws {@link IdemClientError} `INVALID_KEY` unless `key` satisfies the wire format. */
export function assertIdempotencyKey(key: unknown, source: string): asserts key is string {
  if (!isIdempotencyKey(key)) {
    const shown = typeof key === 'string' ? JSON.stringify(key.slice(0, 40)) : typeof key;
    throw new IdemClientError(
      'INVALID_KEY',
      `${source}: an idempotency key must be 1 to 255 visible ASCII characters (0x21-0x7E), got ${shown}`,
    );
  }
}
