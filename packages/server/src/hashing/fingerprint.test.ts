import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, findNul, fingerprint } from './fingerprint.js';

/** Rebuilds an object with its keys in a shuffled order, recursively. */
function shuffleKeys(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((item, i) => shuffleKeys(item, seed + i));
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value);
  const order = entries
    .map((entry, i) => ({ entry, rank: Math.sin(seed * 997 + i * 31) }))
    .sort((a, b) => a.rank - b.rank);
  return Object.fromEntries(order.map(({ entry: [k, v] }) => [k, shuffleKeys(v, seed + 1)]));
}

const json = fc.jsonValue({ maxDepth: 4 });

describe('fingerprint', () => {
  it('ignores object key order, at every depth', () => {
    fc.assert(
      fc.property(json, fc.integer(), (value, seed) => {
        expect(fingerprint(shuffleKeys(value, seed))).toBe(fingerprint(value));
      }),
    );
  });

  it('ignores whitespace: the JSON text a client sent does not matter, only the parsed value', () => {
    fc.assert(
      fc.property(json, (value) => {
        const pretty = JSON.parse(JSON.stringify(value, null, 2));
        expect(fingerprint(pretty)).toBe(fingerprint(value));
      }),
    );
  });

  it('canonical JSON parses back to the same value', () => {
    fc.assert(
      fc.property(json, (value) => {
        expect(JSON.parse(canonicalJson(value))).toEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
  });

  it('tells different values apart', () => {
    fc.assert(
      fc.property(json, json, (a, b) => {
        fc.pre(canonicalJson(a) !== canonicalJson(b));
        expect(fingerprint(a)).not.toBe(fingerprint(b));
      }),
    );
  });

  it.each([
    [
      'sorted keys, no spaces',
      { b: 1, a: [1, { d: 2, c: null }] },
      '{"a":[1,{"c":null,"d":2}],"b":1}',
    ],
    ['undefined members are omitted', { a: undefined, b: 1 }, '{"b":1}'],
    ['no input', undefined, 'null'],
    [
      'dates as ISO strings',
      { at: new Date('2026-01-02T03:04:05.000Z') },
      '{"at":"2026-01-02T03:04:05.000Z"}',
    ],
  ])('canonical form: %s', (_name, value, expected) => {
    expect(canonicalJson(value)).toBe(expected);
  });

  it.each([
    ['a bigint', { n: 1n }],
    ['NaN', { n: Number.NaN }],
    ['a function', { f: () => 1 }],
  ])('refuses %s rather than collapsing it', (_name, value) => {
    expect(() => canonicalJson(value)).toThrow(TypeError);
  });
});

describe('findNul', () => {
  it.each([
    ['a string', 'a\u0000', '$'],
    ['an array item', { tags: ['x', 'y\u0000'] }, '$.tags[1]'],
    ['an object key', { a: { ['k\u0000']: 1 } }, '$.a'],
    ['toJSON output', { at: { toJSON: () => 'x\u0000' } }, '$.at'],
  ])('finds NUL in %s', (_name, value, path) => {
    expect(findNul(value)).toBe(path);
  });

  it.each([
    ['plain', { a: 'b', n: 1, t: [null, true] }],
    ['an escaped text', '\\u0000'],
  ])('finds none in %s', (_name, value) => {
    expect(findNul(value)).toBeNull();
  });
});
