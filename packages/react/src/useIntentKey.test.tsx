import { intentKeys, memoryStorage } from '@idem/client';
import { act, StrictMode, useState, type ReactElement } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { afterEach, describe, expect, it } from 'vitest';
import { useIntentKey, type IntentKeyHandle } from './useIntentKey.js';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

let root: Root | undefined;
afterEach(() => {
  act(() => root?.unmount());
  root = undefined;
  sessionStorage.clear();
});

/** Renders `element` in StrictMode (every render twice, effects mounted twice). */
function render(element: ReactElement): void {
  const container = document.createElement('div');
  root = createRoot(container);
  act(() => root!.render(<StrictMode>{element}</StrictMode>));
}

describe('useIntentKey', () => {
  it('keeps one key across re-renders and clicks, and renews it after a success', () => {
    const keys = intentKeys({ storage: memoryStorage() });
    const seen: (string | null)[] = [];
    let handle!: IntentKeyHandle;
    let rerender!: () => void;
    function Checkout() {
      const [, setTick] = useState(0);
      rerender = () => setTick((tick) => tick + 1);
      handle = useIntentKey('pay:ord_1', { keys });
      seen.push(handle.key);
      return null;
    }
    render(<Checkout />);
    const first = handle.key;
    expect(first).not.toBeNull();
    act(() => rerender());
    act(() => rerender());
    expect(new Set(seen)).toEqual(new Set([first]));

    act(() => handle.complete(first!));
    const second = handle.key;
    expect(second).not.toBeNull();
    expect(second).not.toBe(first);
    // A late answer to the first key (a double click's second request) keeps the new key.
    act(() => handle.complete(first!));
    expect(handle.key).toBe(second);
  });

  it('finds the stored key after a reload (a new mount on the same sessionStorage)', () => {
    let handle!: IntentKeyHandle;
    function Pay() {
      handle = useIntentKey('pay:ord_2');
      return null;
    }
    render(<Pay />);
    const before = handle.key;
    expect(sessionStorage.getItem('idem-intent:pay:ord_2')).toBe(before);
    act(() => root!.unmount());
    render(<Pay />);
    expect(handle.key).toBe(before);
  });

  it('gives every component of one intent the same key, and the new one to all after complete', () => {
    const keys = intentKeys({ storage: memoryStorage() });
    const handles: IntentKeyHandle[] = [];
    function Button({ index }: { index: number }) {
      handles[index] = useIntentKey('checkout:cart_1', { keys });
      return null;
    }
    render(
      <>
        <Button index={0} />
        <Button index={1} />
      </>,
    );
    expect(handles[0]!.key).toBe(handles[1]!.key);
    const first = handles[0]!.key;
    act(() => handles[1]!.complete());
    expect(handles[0]!.key).not.toBe(first);
    expect(handles[0]!.key).toBe(handles[1]!.key);
  });

  it('has no key without an intent, and a new key after discard', () => {
    const keys = intentKeys({ storage: memoryStorage() });
    let handle!: IntentKeyHandle;
    let setIntent!: (intent: string | null) => void;
    function Form() {
      const [intent, set] = useState<string | null>(null);
      setIntent = set;
      handle = useIntentKey(intent, { keys });
      return null;
    }
    render(<Form />);
    expect(handle.key).toBeNull();
    act(() => setIntent('pay:ord_3'));
    const first = handle.key;
    expect(first).not.toBeNull();
    act(() => handle.discard());
    expect(handle.key).not.toBe(first);
    expect(keys.peek('pay:ord_3')).toBe(handle.key);
  });
});
