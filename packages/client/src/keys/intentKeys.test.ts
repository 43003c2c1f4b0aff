import { isIdempotencyKey } from '@idem/contract';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isIdemClientError } from '../errors/IdemClientError.js';
import { intentKeys, memoryStorage, randomKey } from './intentKeys.js';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('intentKeys', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('makes one key when the intent starts and returns it for every later click', () => {
    let made = 0;
    const keys = intentKeys({ storage: null, newKey: () => `key-${++made}` });
    expect(keys.peek('pay:ord_1')).toBeNull();
    expect(keys.keyFor('pay:ord_1')).toBe('key-1');
    expect(keys.keyFor('pay:ord_1')).toBe('key-1');
    expect(keys.peek('pay:ord_1')).toBe('key-1');
    expect(made).toBe(1);
    // Another intent is another key.
    expect(keys.keyFor('pay:ord_2')).toBe('key-2');
  });

  it('keeps the key in the storage, so a reload (a new helper on the same storage) finds it', () => {
    const storage = memoryStorage();
    const before = intentKeys({ storage }).keyFor('pay:ord_1');
    expect(storage.getItem('idem-intent:pay:ord_1')).toBe(before);
    const afterReload = intentKeys({ storage });
    expect(afterReload.keyFor('pay:ord_1')).toBe(before);
  });

  it('renews the key after a success, and a late success of an older key leaves the new one', () => {
    const keys = intentKeys({ storage: memoryStorage() });
    const first = keys.keyFor('checkout:cart_1');
    expect(keys.complete('checkout:cart_1', first)).toBe(true);
    const second = keys.keyFor('checkout:cart_1');
    expect(second).not.toBe(first);
    // The answer to a double click's second request, with the first key, arrives late.
    expect(keys.complete('checkout:cart_1', first)).toBe(false);
    expect(keys.peek('checkout:cart_1')).toBe(second);
    expect(keys.complete('checkout:cart_1')).toBe(true);
    expect(keys.peek('checkout:cart_1')).toBeNull();
  });

  it('forgets a discarded intent', () => {
    const keys = intentKeys({ storage: memoryStorage() });
    const first = keys.keyFor('checkout:cart_1');
    keys.discard('checkout:cart_1');
    expect(keys.keyFor('checkout:cart_1')).not.toBe(first);
  });

  it('uses sessionStorage by default where there is one, and memory where it throws', () => {
    const session = memoryStorage();
    vi.stubGlobal('sessionStorage', session);
    const key = intentKeys({ prefix: 'app:' }).keyFor('pay:ord_1');
    expect(session.getItem('app:pay:ord_1')).toBe(key);

    vi.stubGlobal('sessionStorage', {
      getItem: () => null,
      setItem: () => {
        throw new Error('SecurityError: storage is blocked');
      },
      removeItem: () => {},
    });
    const keys = intentKeys();
    expect(keys.keyFor('pay:ord_1')).toBe(keys.keyFor('pay:ord_1'));
  });

  it('refuses a malformed key from newKey and an empty intent before anything is sent', () => {
    const keys = intentKeys({ storage: null, newKey: () => 'has space' });
    expect(() => keys.keyFor('pay:ord_1')).toThrow(
      expect.objectContaining({ code: 'INVALID_KEY' }),
    );
    try {
      keys.keyFor('pay:ord_1');
    } catch (error) {
      expect(isIdemClientError(error)).toBe(true);
    }
    expect(() => intentKeys({ storage: null }).keyFor('')).toThrow(/non-empty/);
  });
});

describe('randomKey', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('is a version 4 UUID with crypto.randomUUID', () => {
    const key = randomKey();
    expect(key).toMatch(UUID_V4);
    expect(isIdempotencyKey(key)).toBe(true);
  });

  it('is a version 4 UUID without crypto.randomUUID (an insecure browser context)', () => {
    const real = globalThis.crypto;
    vi.stubGlobal('crypto', {
      getRandomValues: (array: Uint8Array<ArrayBuffer>) => real.getRandomValues(array),
    });
    const keys = new Set(Array.from({ length: 200 }, () => randomKey()));
    expect(keys.size).toBe(200);
    for (const key of keys) expect(key).toMatch(UUID_V4);
  });
});
