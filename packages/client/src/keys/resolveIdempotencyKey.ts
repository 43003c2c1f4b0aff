import type { Operation } from '@trpc/client';
import type { IdempotencyKeyFunction } from './IdempotentProcedures.js';
import { assertIdempotencyKey, IDEMPOTENCY_KEY_CONTEXT } from './withIdempotencyKey.js';

/**
 * The key of one logical call, decided once before its first attempt, in tier order:
 *
 * 1. the caller's own key (`withIdempotencyKey`, `op.context.idempotencyKey`);
 * 2. the procedure's key function, given the call's input;
 * 3. a random UUID, made here, once, and reused by every retry of this call.
 *
 * Throws `INVALID_KEY` before anything is sent when a supplied or derived key is malformed.
 */
export function resolveIdempotencyKey(
  op: Pick<Operation, 'path' | 'input' | 'context'>,
  keyFunction: IdempotencyKeyFunction<unknown> | undefined,
  randomUUID: () => string,
): string {
  const own = op.context[IDEMPOTENCY_KEY_CONTEXT];
  if (own !== undefined) {
    assertIdempotencyKey(own, `${op.path}: context.${IDEMPOTENCY_KEY_CONTEXT}`);
    return own;
  }
  if (keyFunction) {
    const derived = keyFunction(op.input);
    assertIdempotencyKey(derived, `${op.path}: key function`);
    return derived;
  }
  return randomUUID();
}
