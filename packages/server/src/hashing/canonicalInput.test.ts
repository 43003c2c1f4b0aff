import { deserialize, serialize } from 'node:v8';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalInput } from './canonicalInput.js';
import { claimFingerprint } from '../request/claimFingerprint.js';
import { fingerprint } from './fingerprint.js';
import { jsonSerializer } from '../replay/jsonSerializer.js';
import { type ResultSerializer } from '../types/ResultSerializer.js';

/**
 * Values a superjson client can send: JSON plus Map, Set, Date, BigInt, undefined, NaN. Leaves
 * come from a small pool so that random pairs are often equal, and often differ by one detail.
 */
const value = fc.letrec((tie) => ({
  leaf: fc.oneof(
    fc.constantFrom(undefined, null, 0, 1, 1n, 2n, '1', '', 'a', true, false, NaN, Infinity),
    fc.constantFrom(0, 1).map((ms) => new Date(ms)),
  ),
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    tie('leaf'),
    fc.array(tie('node'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom('a', 'b', 'c'), tie('node'), {
      maxKeys: 3,
      noNullPrototype: true,
    }),
    fc.array(fc.tuple(tie('leaf'), tie('node')), { maxLength: 3 }).map((e) => new Map(e)),
    fc.array(tie('leaf'), { maxLength: 3 }).map((items) => new Set(items)),
  ),
})).node;

/** The same value with object keys, Map entries and Set items in reverse order, recursively. */
function reorder(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reorder);
  if (v instanceof Map) return new Map([...v].reverse().map(([k, x]) => [k, reorder(x)]));
  if (v instanceof Set) return new Set([...v].reverse());
  if (v === null || typeof v !== 'object' || v instanceof Date) return v;
  return Object.fromEntries(
    Object.entries(v)
      .reverse()
      .map(([k, x]) => [k, reorder(x)]),
  );
}

/** A serializer that carries what superjson carries (structured clone), for external mode. */
const structuredSerializer: ResultSerializer = {
  serialize: (v) => serialize(v).toString('base64'),
  deserialize: (text) => deserialize(Buffer.from(text, 'base64')),
};

describe('fingerprint algorithm 2', () => {
  it('gives two inputs one fingerprint exactly when they are deeply equal (Map, Set, Date, BigInt, undefined)', () => {
    fc.assert(
      fc.property(value, value, (a, b) => {
        expect(fingerprint(a) === fingerprint(b)).toBe(isDeepStrictEqual(a, b));
      }),
      { numRuns: 2000 },
    );
  });

  it('ignores the order of object keys, Map entries and Set items', () => {
    fc.assert(
      fc.property(value, (v) => {
        expect(fingerprint(reorder(v))).toBe(fingerprint(v));
      }),
    );
  });

  it.each<[string, unknown, unknown]>([
    ['two Maps', new Map([['a', 1]]), new Map([['a', 2]])],
    ['a Map and an empty object', new Map([['a', 1]]), {}],
    ['two Sets', new Set([1]), new Set([2])],
    ['a Set and a Map', new Set(), new Map()],
    ['a Date and its ISO string', new Date(0), new Date(0).toISOString()],
    ['a BigInt and a number', 1n, 1],
    ['an undefined member and a missing one', { a: undefined }, {}],
    ['undefined and null in an array', [undefined], [null]],
    ['undefined and null', undefined, null],
  ])('tells apart %s (algorithm 1 did not)', (_name, a, b) => {
    expect(fingerprint(a)).not.toBe(fingerprint(b));
    expect(canonicalInput(a)).not.toBe(canonicalInput(b));
  });

  it('keeps plain JSON in canonical JSON: key order and whitespace do not count', () => {
    expect(canonicalInput({ b: [1, 'x'], a: { d: null, c: true } })).toBe(
      '{"a":{"c":true,"d":null},"b":[1,"x"]}',
    );
  });

  it.each<[string, unknown, RegExp]>([
    ['a function', { f: () => 1 }, /a function at \$\.f/],
    ['a RegExp', { r: [/x/] }, /an instance of RegExp at \$\.r\[0\]/],
    ['a typed array', new Uint8Array(2), /an instance of Uint8Array at \$/],
    [
      'a circular structure',
      (() => {
        const o: Record<string, unknown> = {};
        o.self = o;
        return o;
      })(),
      /circular reference at \$\.self/,
    ],
  ])('refuses %s, saying where', (_name, input, message) => {
    expect(() => canonicalInput(input)).toThrow(message);
    const checked = claimFingerprint(input, false, jsonSerializer);
    expect(checked.ok).toBe(false);
  });

  it('refuses at claim, in external mode, an input the configured serializer would not give back', () => {
    fc.assert(
      fc.property(value, (v) => {
        const json = claimFingerprint(v, true, jsonSerializer);
        // JSON carries it exactly when it comes back deeply equal.
        const back = (() => {
          try {
            return { ok: true, v: jsonSerializer.deserialize(jsonSerializer.serialize(v)) };
          } catch {
            return { ok: false, v: undefined };
          }
        })();
        expect(json.ok).toBe(back.ok && isDeepStrictEqual(back.v, v));
        // A serializer that carries Map, Set, Date, BigInt and undefined stores every such input.
        const structured = claimFingerprint(v, true, structuredSerializer);
        expect(structured).toMatchObject({ ok: true, fingerprint: fingerprint(v) });
      }),
      { numRuns: 500 },
    );
    expect(claimFingerprint({ at: new Map([['a', 1]]) }, true, jsonSerializer)).toMatchObject({
      ok: false,
      message: expect.stringMatching(/does not survive the configured serializer/),
    });
  });
});
