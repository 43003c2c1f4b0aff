import { describe, expect, it } from 'vitest';
import { parseRetryAfter } from './parseRetryAfter.js';

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  it.each([
    ['0', 0],
    ['2', 2000],
    [' 120 ', 120_000],
    ['Thu, 01 Jan 2026 00:00:05 GMT', 5000],
    ['Wed, 31 Dec 2025 23:59:00 GMT', 0],
    ['-1', undefined],
    ['1.5', undefined],
    ['soon', undefined],
    ['', undefined],
    [null, undefined],
  ])('%j -> %j ms', (value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });
});
