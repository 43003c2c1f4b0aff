import { readIdemErrorData, type IdemErrorData } from '@idem/contract';

/**
 * The typed `data.idem` of an error idem's server middleware raised (reason, `retryAfterMs`,
 * `operationId`), or `null` for any other error. Tells the two conflicts apart without parsing
 * messages:
 *
 * ```ts
 * if (idemErrorOf(error)?.reason === 'IDEMPOTENCY_KEY_REUSED') showEditedFormWarning();
 * ```
 */
export function idemErrorOf(error: unknown): IdemErrorData | null {
  if (typeof error !== 'object' || error === null) return null;
  return readIdemErrorData((error as { data?: unknown }).data);
}
