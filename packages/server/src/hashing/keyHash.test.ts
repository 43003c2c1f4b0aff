import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RecoveryStore } from '@idem/contract';
import { createIdempotency } from '../createIdempotency.js';
import { checkedKeySecrets, hashIdempotencyKey } from './keyHash.js';

const secret = 's'.repeat(32);
const other = 'o'.repeat(32);

describe('hashIdempotencyKey', () => {
  it('hashes keys to 64 hex characters and never returns the key', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string(), (key, scope) => {
        const hash = hashIdempotencyKey(key, secret, scope);
        expect(hash).toMatch(/^[0-9a-f]{64}$/);
        expect(hash).not.toContain(key.length > 3 ? key : '\u0000');
      }),
    );
  });

  it('keeps equal keys in two scopes apart, and scope/key splits never meet', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.string(), (key, a, b) => {
        fc.pre(a !== b);
        expect(hashIdempotencyKey(key, secret, a)).not.toBe(hashIdempotencyKey(key, secret, b));
      }),
    );
    expect(hashIdempotencyKey('c', secret, 'a:b')).not.toBe(hashIdempotencyKey('b:c', secret, 'a'));
  });

  it('cannot be confirmed by hashing a guess without the secret', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string(), (key, scope) => {
        const keyed = hashIdempotencyKey(key, secret, scope);
        expect(keyed).not.toBe(createHash('sha256').update(key).digest('hex'));
        expect(keyed).not.toBe(createHash('sha256').update(`${scope}:${key}`).digest('hex'));
        expect(keyed).not.toBe(hashIdempotencyKey(key, other, scope));
      }),
    );
  });

  it.each([
    [
      'missing',
      undefined,
      undefined,
      /`keySecret` must be a server secret of at least 32 characters/,
    ],
    ['short', 'x'.repeat(31), undefined, /`keySecret` must be/],
    ['a short previous one', secret, ['short'], /`previousKeySecrets\[0\]` must be/],
  ])('refuses a %s secret at start-up, naming the fix', (_name, current, previous, message) => {
    expect(() => checkedKeySecrets(current, previous)).toThrow(message);
  });

  it('is a start-up error of createIdempotency, never a silent plain hash', () => {
    expect(() =>
      createIdempotency({
        store: {} as RecoveryStore<unknown>,
        scope: () => 'acct',
        keySecret: undefined as never,
      }),
    ).toThrow(/`keySecret` must be a server secret/);
  });
});
