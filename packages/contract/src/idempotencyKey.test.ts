import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  IDEMPOTENCY_KEY_MAX_LENGTH,
  idempotencyKeySchema,
  parseIdempotencyKey,
} from './idempotencyKey.js';

describe('parseIdempotencyKey', () => {
  it.each([
    ['no header', [], 'IDEMPOTENCY_KEY_MISSING'],
    ['empty', [''], 'IDEMPOTENCY_KEY_INVALID'],
    ['256 characters', ['a'.repeat(256)], 'IDEMPOTENCY_KEY_INVALID'],
    ['a space', ['order 1'], 'IDEMPOTENCY_KEY_INVALID'],
    ['a tab', ['order\t1'], 'IDEMPOTENCY_KEY_INVALID'],
    ['a control character', ['order\u00011'], 'IDEMPOTENCY_KEY_INVALID'],
    ['DEL', ['order\u007f'], 'IDEMPOTENCY_KEY_INVALID'],
    ['non-ASCII', ['commande-é'], 'IDEMPOTENCY_KEY_INVALID'],
    ['two headers', ['a', 'b'], 'IDEMPOTENCY_KEY_INVALID'],
  ] as const)('refuses %s', (_name, values, reason) => {
    const result = parseIdempotencyKey(values);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toBe(reason);
  });

  it.each([['a'], ['order-confirm-42'], ['!~'], ['a'.repeat(IDEMPOTENCY_KEY_MAX_LENGTH)]])(
    'accepts %s',
    (key) => {
      expect(parseIdempotencyKey([key])).toEqual({ ok: true, key });
    },
  );

  it('accepts every string of 1..255 visible ASCII characters and round-trips it', () => {
    const visible = fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c));
    fc.assert(
      fc.property(fc.string({ unit: visible, minLength: 1, maxLength: 255 }), (key) => {
        const result = parseIdempotencyKey([key]);
        return result.ok && result.key === key;
      }),
    );
  });

  it('refuses every string that contains a character outside 0x21..0x7E', () => {
    const outside = fc
      .oneof(fc.integer({ min: 0, max: 0x20 }), fc.integer({ min: 0x7f, max: 0xffff }))
      .map((c) => String.fromCharCode(c));
    const visible = fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c));
    fc.assert(
      fc.property(
        fc.string({ unit: visible, maxLength: 100 }),
        outside,
        fc.string({ unit: visible, maxLength: 100 }),
        (before, bad, after) => !parseIdempotencyKey([before + bad + after]).ok,
      ),
    );
  });

  it('accepts exactly what idempotencyKeySchema accepts (its checks are written out)', () => {
    const near = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc.string({
        unit: fc.integer({ min: 0x1f, max: 0x7f }).map((c) => String.fromCharCode(c)),
        maxLength: 260,
      }),
      fc.integer({ min: 250, max: 260 }).map((n) => '~'.repeat(n)),
    );
    fc.assert(
      fc.property(near, (value) => {
        const parsed = parseIdempotencyKey([value]);
        expect(parsed.ok).toBe(idempotencyKeySchema.safeParse(value).success);
        if (parsed.ok) expect(parsed.key).toBe(value);
      }),
      { numRuns: 2000 },
    );
  });
});
