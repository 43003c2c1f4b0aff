import { fingerprint } from '../hashing/fingerprint.js';
import type { ResultSerializer } from '../types/ResultSerializer.js';

/** The input's fingerprint, and its stored text when the claim keeps it; or why it is refused. */
export type ClaimFingerprint =
  { ok: true; fingerprint: string; storedText: string | null } | { ok: false; message: string };

/**
 * Fingerprints an input at claim, refusing (before anything is stored) an input idem cannot
 * represent faithfully:
 *
 * - one the fingerprint cannot tell apart from another (a function, a class instance without
 *   `toJSON`, a circular structure: see `canonicalInput`);
 * - when the input is stored for the completer (`store`: external mode), one that does not come
 *   back from the configured serializer as it went in: with the default JSON serializer, a Map,
 *   a Set, a Date, a BigInt or an `undefined` member. The completer would resume the work with a
 *   different input than the request's.
 */
export function claimFingerprint(
  input: unknown,
  store: boolean,
  serializer: ResultSerializer,
): ClaimFingerprint {
  let own: string;
  try {
    own = fingerprint(input);
  } catch (error) {
    return { ok: false, message: (error as Error).message };
  }
  if (!store) return { ok: true, fingerprint: own, storedText: null };
  let storedText: string;
  let again: string | null;
  try {
    storedText = serializer.serialize(input);
    again = fingerprint(serializer.deserialize(storedText));
  } catch {
    again = null;
    storedText = '';
  }
  if (again !== own) {
    return {
      ok: false,
      message:
        "the input does not survive the configured serializer unchanged (external mode stores it for the completer): pass createIdempotency a serializer that carries Map, Set, Date, BigInt and undefined (e.g. superjson's), or make the input schema produce JSON values",
    };
  }
  return { ok: true, fingerprint: own, storedText };
}
