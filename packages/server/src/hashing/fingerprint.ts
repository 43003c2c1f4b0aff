import { FINGERPRINT_VERSION } from '@idem/contract';
import { canonicalInput } from './canonicalInput.js';
import { sha256Hex } from './sha256.js';

/**
 * Canonical JSON of a parsed input: object keys sorted by code point, no insignificant
 * whitespace, `undefined` object members omitted (as JSON does). Whether an omitted field and an
 * explicit `null` are the same is left to the input schema, which runs before this.
 *
 * Throws on values JSON cannot carry faithfully (bigint, functions, symbols, non-finite numbers),
 * so two different inputs never collapse to one fingerprint by accident.
 */
export function canonicalJson(value: unknown): string {
  return write(value === undefined ? null : value, new Set());
}

function write(value: unknown, seen: Set<object>): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`cannot fingerprint the number ${value}`);
      return JSON.stringify(value);
    case 'object':
      break;
    default:
      throw new TypeError(`cannot fingerprint a value of type ${typeof value}`);
  }
  const object = value as object;
  if ('toJSON' in object && typeof object.toJSON === 'function') {
    return write(object.toJSON(), seen);
  }
  if (seen.has(object)) throw new TypeError('cannot fingerprint a circular structure');
  seen.add(object);
  try {
    if (Array.isArray(object)) {
      return `[${object.map((item) => (item === undefined ? 'null' : write(item, seen))).join(',')}]`;
    }
    const entries = Object.keys(object)
      .filter((key) => (object as Record<string, unknown>)[key] !== undefined)
      .sort()
      .map(
        (key) => `${JSON.stringify(key)}:${write((object as Record<string, unknown>)[key], seen)}`,
      );
    return `{${entries.join(',')}}`;
  } finally {
    seen.delete(object);
  }
}

/**
 * Where a parsed input holds a NUL character (U+0000), which PostgreSQL refuses in `text` and
 * `jsonb`: the path of the first such string value or object key (`$.note.text`, `$.tags[2]`),
 * or null when there is none. Walks the value as {@link canonicalJson} does.
 */
export function findNul(value: unknown, path = '$'): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? path : null;
  if (typeof value !== 'object' || value === null) return null;
  if ('toJSON' in value && typeof value.toJSON === 'function') {
    const json: unknown = value.toJSON();
    return json === value ? null : findNul(json, path);
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findNul(value[i], `${path}[${i}]`);
      if (found) return found;
    }
    return null;
  }
  for (const [key, item] of Object.entries(value)) {
    if (key.includes('\u0000')) return path;
    const found = findNul(item, `${path}.${key}`);
    if (found) return found;
  }
  return null;
}

/** The fingerprint algorithms by version; a record is compared with the algorithm it was made by. */
const algorithms: Record<number, (input: unknown) => string> = {
  /** Records made before algorithm 2: Map and Set wrote as `{}`, undefined members dropped. */
  1: (input) => sha256Hex(canonicalJson(input)),
  /** The input as the procedure received it, Map, Set, Date, BigInt and undefined included. */
  2: (input) => sha256Hex(canonicalInput(input)),
};

/**
 * SHA-256 (hex) of the canonical text of `input`, by the given algorithm version (the current
 * one, {@link FINGERPRINT_VERSION}, unless a record made by an older one is compared).
 */
export function fingerprint(input: unknown, version: number = FINGERPRINT_VERSION): string {
  const algorithm = algorithms[version];
  if (!algorithm) throw new Error(`unknown fingerprint algorithm version ${version}`);
  return algorithm(input);
}
