import { createHash, createHmac } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hmacSha256Hex, sha256Hex } from './sha256.js';

describe('sha256Hex and hmacSha256Hex', () => {
  it('give createHash’s bytes for any text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        expect(sha256Hex(text)).toBe(createHash('sha256').update(text).digest('hex'));
      }),
    );
  });

  it('give createHmac’s bytes for any text and secrets shorter, as long as and longer than a block', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', minLength: 1, maxLength: 200 }),
        fc.string({ unit: 'binary' }),
        (secret, text) => {
          expect(hmacSha256Hex(secret, text)).toBe(
            createHmac('sha256', secret).update(text).digest('hex'),
          );
        },
      ),
    );
    for (const secret of ['k'.repeat(32), 'k'.repeat(64), 'k'.repeat(65), 'é'.repeat(40)]) {
      expect(hmacSha256Hex(secret, 'a:b:c')).toBe(
        createHmac('sha256', secret).update('a:b:c').digest('hex'),
      );
    }
  });

  it('give createHmac’s bytes on the string path (ASCII secrets of at most a block), calls interleaved', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 64 }),
        fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 64 }),
        fc.string({ unit: 'binary' }),
        (one, other, text) => {
          // Each secret's reused buffer is overwritten per call: alternating two must not mix them.
          for (const secret of [one, other, one]) {
            expect(hmacSha256Hex(secret, text)).toBe(
              createHmac('sha256', secret).update(text).digest('hex'),
            );
          }
        },
      ),
    );
  });
});
