import type { IdempotencyOptions } from '@idem/contract';
import type { KeyRequirement } from '../types/options.js';

/**
 * The meta of this process's procedures built with `keys: 'optional'` (per process): a batch
 * that holds one of them without a key is not refused (idemContext.ts). The meta object is the
 * one `idem.procedure()` put on the procedure; tRPC keeps it by reference when it merges metas.
 */
const optionalKeyMetas = new WeakSet<IdempotencyOptions>();

/** A `keys` option checked at start-up; `where` names the option in the message. */
export function checkedKeyRequirement(value: unknown, where: string): KeyRequirement | undefined {
  if (value === undefined || value === 'required' || value === 'optional') return value;
  throw new TypeError(
    `${where}: keys must be 'required' or 'optional', got ${JSON.stringify(value) ?? String(value)}`,
  );
}

/** Records that the procedure with this meta runs calls without a key unprotected. */
export function markKeysOptional(meta: IdempotencyOptions): void {
  optionalKeyMetas.add(meta);
}

/** Does the procedure with this meta run calls without a key (`keys: 'optional'`)? */
export function keysOptional(meta: IdempotencyOptions | undefined): boolean {
  return meta !== undefined && optionalKeyMetas.has(meta);
}
