import { intentKeys, type IntentKeys } from '@idem/client';
import { useCallback, useSyncExternalStore } from 'react';

/** Options of {@link useIntentKey}. */
export interface UseIntentKeyOptions {
  /**
   * Where the keys live. Defaults to one shared `intentKeys()` of the page (`sessionStorage`: kept
   * across reloads of the tab). Pass your own to use `localStorage` or a prefix.
   */
  keys?: IntentKeys;
}

/** What {@link useIntentKey} returns. */
export interface IntentKeyHandle {
  /** The intent's key (the same on every render until {@link complete}), or null without intent. */
  key: string | null;
  /**
   * The intent succeeded: the next render gets a new key. Pass the key that succeeded (from the
   * mutation's variables or context): a late answer for an older key then leaves a newer key
   * alone. Defaults to the current key.
   */
  complete: (succeededKey?: string) => void;
  /** The user changed or abandoned the intent: the next render gets a new key. */
  discard: () => void;
}

let pageKeys: IntentKeys | undefined;
const listeners = new WeakMap<IntentKeys, Set<() => void>>();

function listenersOf(keys: IntentKeys): Set<() => void> {
  let set = listeners.get(keys);
  if (!set) listeners.set(keys, (set = new Set()));
  return set;
}

/**
 * One idempotency key per user intent, for React: made when the intent starts, the same on every
 * re-render, click and retry, kept across a reload of the tab, and renewed after a success.
 * Every component that uses the same intent (and the same `keys`) sees the same key, and sees it
 * change when one of them calls `complete` or `discard`.
 *
 * Name the intent after what the user means to do once, with the ids that make it unique:
 * `pay:${orderId}`, `checkout:${cartId}`. Pass null while there is no intent yet (no order).
 *
 * @example
 * const pay = useIntentKey(`pay:${orderId}`);
 * const mutation = useMutation(
 *   trpc.payments.create.mutationOptions({
 *     trpc: { context: { idempotencyKey: pay.key } },
 *     onSuccess: () => pay.complete(),
 *   }),
 * );
 */
export function useIntentKey(
  intent: string | null,
  options: UseIntentKeyOptions = {},
): IntentKeyHandle {
  const keys = options.keys ?? (pageKeys ??= intentKeys());
  const subscribe = useCallback(
    (onChange: () => void) => {
      const set = listenersOf(keys);
      set.add(onChange);
      return () => void set.delete(onChange);
    },
    [keys],
  );
  // keyFor stores the key it makes: every later call (and every render) returns the same string.
  const getKey = useCallback(() => (intent === null ? null : keys.keyFor(intent)), [keys, intent]);
  // On a server render nothing is stored; the browser makes the key on hydration.
  const key = useSyncExternalStore(subscribe, getKey, () => null);
  const notify = useCallback(() => {
    for (const onChange of [...listenersOf(keys)]) onChange();
  }, [keys]);
  const complete = useCallback(
    (succeededKey?: string) => {
      if (intent === null) return;
      const current = succeededKey ?? keys.peek(intent);
      if (current !== null && keys.complete(intent, current)) notify();
    },
    [keys, intent, notify],
  );
  const discard = useCallback(() => {
    if (intent === null) return;
    keys.discard(intent);
    notify();
  }, [keys, intent, notify]);
  return { key, complete, discard };
}
