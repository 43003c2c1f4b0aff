import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { newOperationId } from './operationId.js';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The milliseconds a version-7 UUID carries in its first 48 bits. */
const millisecondsOf = (id: string) => Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16);

describe('newOperationId', () => {
  it('makes version-7 UUIDs (RFC 9562) that carry the time they were made, as uuid columns and Zod take them', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 48 - 1 }), (nowMs) => {
        const id = newOperationId(nowMs);
        expect(id).toMatch(V7);
        expect(millisecondsOf(id)).toBe(nowMs);
      }),
    );
    const now = Date.now();
    const id = newOperationId();
    expect(millisecondsOf(id)).toBeGreaterThanOrEqual(now);
    expect(millisecondsOf(id)).toBeLessThanOrEqual(Date.now());
    expect(z.uuid().safeParse(id).success).toBe(true);
  });

  it('orders ids of later milliseconds after earlier ones, as text and as PostgreSQL compares uuids (bytes)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 48 - 2 }),
        fc.integer({ min: 1, max: 10_000 }),
        (earlier, gap) => {
          const later = Math.min(earlier + gap, 2 ** 48 - 1);
          expect(newOperationId(earlier) < newOperationId(later)).toBe(true);
        },
      ),
    );
  });

  it('never repeats, across many refills of its pool of random bytes, all in one millisecond', () => {
    const ids = new Set<string>();
    for (let i = 0; i < 20_000; i++) ids.add(newOperationId(1_700_000_000_000));
    expect(ids.size).toBe(20_000);
    // 74 random bits each: the random part differs too, not only the time.
    const randomParts = new Set([...ids].map((id) => id.slice(15)));
    expect(randomParts.size).toBe(20_000);
  });
});
