import { z } from 'zod';

/** Shortest and longest accepted key, in characters. */
export const IDEMPOTENCY_KEY_MIN_LENGTH = 1;
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;

/** Visible ASCII only: 0x21 (`!`) to 0x7E (`~`). No spaces, no control characters, no Unicode. */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7E]+$/;

/** The key format of the wire contract: 1 to 255 visible ASCII characters. */
export const idempotencyKeySchema = z
  .string()
  .min(IDEMPOTENCY_KEY_MIN_LENGTH)
  .max(IDEMPOTENCY_KEY_MAX_LENGTH)
  .regex(IDEMPOTENCY_KEY_PATTERN, 'visible ASCII characters only (0x21 to 0x7E)')
  .brand<'IdempotencyKey'>();

/** A string known to satisfy {@link idempotencyKeySchema}. */
export type IdempotencyKey = z.infer<typeof idempotencyKeySchema>;

/** Why a key header was refused, or the key it carried. */
export type IdempotencyKeyParseResult =
  | { ok: true; key: IdempotencyKey }
  | { ok: false; reason: 'IDEMPOTENCY_KEY_MISSING' | 'IDEMPOTENCY_KEY_INVALID'; message: string };

/**
 * Reads the key out of the header values of one request. `values` is every value the request
 * carried for the header (none, one, or several); more than one is refused, never joined.
 */
export function parseIdempotencyKey(values: readonly string[]): IdempotencyKeyParseResult {
  if (values.length === 0) {
    return {
      ok: false,
      reason: 'IDEMPOTENCY_KEY_MISSING',
      message: 'Idempotency-Key header is required',
    };
  }
  if (values.length > 1) {
    return {
      ok: false,
      reason: 'IDEMPOTENCY_KEY_INVALID',
      message: 'exactly one Idempotency-Key header is allowed',
    };
  }
  // The schema's checks written out (once per request; Zod's machinery cost more than the
  // checks): the same bounds on `length` (UTF-16 code units, as Zod counts) and the same pattern.
  // idempotencyKey.test.ts checks both agree on any string.
  const value = values[0]!;
  if (
    value.length < IDEMPOTENCY_KEY_MIN_LENGTH ||
    value.length > IDEMPOTENCY_KEY_MAX_LENGTH ||
    !IDEMPOTENCY_KEY_PATTERN.test(value)
  ) {
    return {
      ok: false,
      reason: 'IDEMPOTENCY_KEY_INVALID',
      message: `Idempotency-Key must be ${IDEMPOTENCY_KEY_MIN_LENGTH} to ${IDEMPOTENCY_KEY_MAX_LENGTH} visible ASCII characters`,
    };
  }
  return { ok: true, key: value as IdempotencyKey };
}

/** True when `value` is a well-formed key. */
export function isIdempotencyKey(value: unknown): value is IdempotencyKey {
  return idempotencyKeySchema.safeParse(value).success;
}
