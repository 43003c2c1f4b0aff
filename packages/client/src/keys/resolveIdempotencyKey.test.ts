import { describe, expect, it, vi } from 'vitest';
import { isIdemClientError } from '../errors/IdemClientError.js';
import { resolveIdempotencyKey } from './resolveIdempotencyKey.js';
import { withIdempotencyKey } from './withIdempotencyKey.js';

const op = (context: Record<string, unknown> = {}) => ({
  path: 'orders.create',
  input: { sku: 'tea' },
  context,
});

describe('resolveIdempotencyKey', () => {
  it('prefers the caller’s key, then the key function, then a random UUID', () => {
    const keyFunction = vi.fn((input: unknown) => `order-${(input as { sku: string }).sku}`);
    const random = vi.fn(() => 'uuid');
    const { context } = withIdempotencyKey('order-confirm-42');
    expect(resolveIdempotencyKey(op(context), keyFunction, random)).toBe('order-confirm-42');
    expect(keyFunction).not.toHaveBeenCalled();
    expect(resolveIdempotencyKey(op(), keyFunction, random)).toBe('order-tea');
    expect(random).not.toHaveBeenCalled();
    expect(resolveIdempotencyKey(op(), undefined, random)).toBe('uuid');
  });

  it.each([
    ['a number', { idempotencyKey: 42 }, undefined],
    ['an empty string', { idempotencyKey: '' }, undefined],
    ['a space', { idempotencyKey: 'order 1' }, undefined],
    ['256 characters', { idempotencyKey: 'k'.repeat(256) }, undefined],
    ['a key function that returns non-ASCII', {}, () => 'commande-é'],
  ])('refuses %s before anything is sent', (_name, context, keyFunction) => {
    let error: unknown;
    try {
      resolveIdempotencyKey(op(context), keyFunction, () => 'uuid');
    } catch (caught) {
      error = caught;
    }
    expect(isIdemClientError(error) && error.code).toBe('INVALID_KEY');
  });

  it('keeps the other call options', () => {
    const signal = new AbortController().signal;
    expect(withIdempotencyKey('k', { signal, context: { other: 1 } })).toEqual({
      signal,
      context: { other: 1, idempotencyKey: 'k' },
    });
  });
});
