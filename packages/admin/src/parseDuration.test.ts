import { describe, expect, it } from 'vitest';
import { parseDuration } from './parseDuration.js';

describe('parseDuration', () => {
  it.each([
    ['1500ms', 1_500],
    ['30s', 30_000],
    ['90m', 5_400_000],
    ['24h', 86_400_000],
    ['72h', 259_200_000],
    ['7d', 604_800_000],
    ['14d', 1_209_600_000],
  ])('reads %s as %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each([
    ['a bare number (which unit?)', '86400000'],
    ['zero', '0h'],
    ['a leading zero', '07d'],
    ['a negative', '-1h'],
    ['a fraction', '1.5h'],
    ['a space', '7 d'],
    ['a word', '7 days'],
    ['two units', '1h30m'],
    ['an unknown unit', '2w'],
    ['upper case', '24H'],
    ['empty', ''],
    ['more than 2^53 ms', '200000000000d'],
  ])('refuses %s: %j', (_name, text) => {
    expect(parseDuration(text)).toBeUndefined();
  });
});
