import { assertIdempotencyKey } from './withIdempotencyKey.js';

/**
 * Where intent keys are kept: the part of the Web Storage API they need, so `sessionStorage` and
 * `localStorage` fit as they are, and a `Map`-backed object fits in tests and on servers.
 */
export interface IntentKeyStorage {
  getItem(name: string): string | null;
  setItem(name: string, value: string): void;
  removeItem(name: string): void;
}

/** Options of {@link intentKeys}. Every option has a default. */
export interface IntentKeysOptions {
  /**
   * Where keys are kept between calls and reloads. Defaults to the browser's `sessionStorage`
   * (one tab, kept across reloads, gone when the tab closes), and to memory where there is none
   * (Node, a worker, storage blocked by the browser's privacy settings). Use `localStorage` to
   * share a pending intent between tabs; pass `null` for memory only (no reload survives).
   */
  storage?: IntentKeyStorage | null;
  /** Prefix of the storage entries, so they never collide with yours. Defaults to `idem-intent:`. */
  prefix?: string;
  /**
   * Makes a new key. Defaults to `crypto.randomUUID()`, or, where that is missing (an insecure
   * context: a page served over plain HTTP from a name other than localhost), a version 4 UUID
   * from `crypto.getRandomValues`, which every context has.
   */
  newKey?: () => string;
}

/**
 * Keys per user intent: one key for "pay order ord_42", from the first click until that payment
 * succeeded, whatever happens in between (double clicks, re-renders, retries, a reload).
 */
export interface IntentKeys {
  /**
   * The key of `intent`: the stored one, or a new one made now and stored. Call it for every
   * click; it returns the same key until {@link complete} or {@link discard}.
   */
  keyFor(intent: string): string;
  /** The stored key of `intent`, or null; never makes one. */
  peek(intent: string): string | null;
  /**
   * The intent succeeded: forgets its key, so the next {@link keyFor} makes a new one (the next
   * order, the next payment). Call it only for the key that succeeded: a late answer for an older
   * key leaves a newer key alone. Returns whether a key was forgotten.
   */
  complete(intent: string, key?: string): boolean;
  /** The user abandoned or changed the intent (edited the form): forgets its key. */
  discard(intent: string): void;
}

/**
 * Keys per user intent, framework-free: a key is made when the intent starts, reused for every
 * click and retry, kept across a reload (in `sessionStorage` by default), and renewed after a
 * success. Name the intent after what the user means to do once, with the ids that make it
 * unique (`pay:${orderId}`, `checkout:${cartId}`); the key then travels with
 * `withIdempotencyKey(keys.keyFor(intent))`.
 *
 * @example
 * const keys = intentKeys();
 * async function pay(orderId: string) {
 *   const intent = `pay:${orderId}`;
 *   const key = keys.keyFor(intent);
 *   const payment = await trpc.payments.create.mutate(input, withIdempotencyKey(key));
 *   keys.complete(intent, key);
 *   return payment;
 * }
 */
export function intentKeys(options: IntentKeysOptions = {}): IntentKeys {
  // Configured once.
  const store =
    (options.storage === undefined ? browserSessionStorage() : options.storage) ?? memoryStorage();
  const prefix = options.prefix ?? 'idem-intent:';
  const newKey = options.newKey ?? randomKey;
  const name = (intent: string) => {
    if (intent.length === 0) throw new TypeError('intentKeys: an intent is a non-empty string');
    return prefix + intent;
  };

  return {
    keyFor(intent) {
      const entry = name(intent);
      const stored = store.getItem(entry);
      if (stored !== null && stored !== '') return stored;
      const key = newKey();
      assertIdempotencyKey(key, 'intentKeys: newKey()');
      store.setItem(entry, key);
      return key;
    },
    peek(intent) {
      const stored = store.getItem(name(intent));
      return stored === '' ? null : stored;
    },
    complete(intent, key) {
      const entry = name(intent);
      const stored = store.getItem(entry);
      if (stored === null || (key !== undefined && stored !== key)) return false;
      store.removeItem(entry);
      return true;
    },
    discard(intent) {
      store.removeItem(name(intent));
    },
  };
}

/** A storage in memory: kept for the life of the page or process. */
export function memoryStorage(): IntentKeyStorage {
  const items = new Map<string, string>();
  return {
    getItem: (name) => items.get(name) ?? null,
    setItem: (name, value) => void items.set(name, value),
    removeItem: (name) => void items.delete(name),
  };
}

/** `sessionStorage`, when there is one and it can be used (Safari's private mode throws). */
function browserSessionStorage(): IntentKeyStorage | null {
  try {
    const storage = (globalThis as { sessionStorage?: IntentKeyStorage }).sessionStorage;
    if (!storage) return null;
    const probe = 'idem-intent-probe';
    storage.setItem(probe, probe);
    storage.removeItem(probe);
    return storage;
  } catch {
    return null;
  }
}

/**
 * A random version 4 UUID: `crypto.randomUUID()` where it exists (secure contexts and Node), else
 * built from `crypto.getRandomValues()`, which insecure contexts have too.
 */
export function randomKey(): string {
  const crypto = globalThis.crypto;
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
