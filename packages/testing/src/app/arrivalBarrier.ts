import type { IdemTestStore } from './IdemTestDatabase.js';

/** The store calls a barrier can hold: the one that decides a request's race, by mode. */
export type BarrierCall = 'commitWithRecord' | 'transaction' | 'claim';

/** The longest a barrier holds the first arrivals when the others never come (a request refused before the store). */
const MAX_HOLD_MS = 2_000;

/**
 * @internal Holds the store call that decides a request's race until `expected` requests have
 * made it, then lets them all go at once: concurrent duplicates overlap in the database for
 * sure, not only when the scheduler happens to interleave them. One-shot.
 */
export class ArrivalBarrier {
  #arrived = 0;
  #release!: () => void;
  readonly #released = new Promise<void>((resolve) => (this.#release = resolve));
  #timer: NodeJS.Timeout | undefined;

  constructor(
    readonly call: BarrierCall,
    readonly expected: number,
  ) {}

  /** Waits until every expected request has arrived (or the hold ran out). */
  arrive(): Promise<void> {
    this.#arrived += 1;
    if (this.#arrived >= this.expected) this.open();
    else if (this.#arrived === 1) {
      this.#timer = setTimeout(() => this.open(), MAX_HOLD_MS);
      this.#timer.unref();
    }
    return this.#released;
  }

  /** Lets every held call go, and every later one pass. */
  open(): void {
    clearTimeout(this.#timer);
    this.#arrived = Number.POSITIVE_INFINITY;
    this.#release();
  }
}

/** @internal What a run's stores consult on every call: the gate's barrier, if one is set. */
export interface StoreHooks {
  barrier: ArrivalBarrier | null;
}

/** @internal The hooks of each run, for its gates. */
export const runHooks = new WeakMap<object, StoreHooks>();

/**
 * @internal The store with the run's hooks in front: a call the barrier names, made outside a
 * transaction, waits for the barrier first. Every other call goes straight through.
 */
export function hookedStore(store: IdemTestStore, hooks: StoreHooks): IdemTestStore {
  return new Proxy(store, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => unknown;
      if (property !== 'commitWithRecord' && property !== 'transaction' && property !== 'claim') {
        return method.bind(target);
      }
      return async (...args: unknown[]) => {
        const barrier = hooks.barrier;
        // A claim inside a transaction is never held: on PGlite the held transaction would
        // keep every other request out of the database.
        const outside = property !== 'claim' || args[1] === undefined;
        if (barrier && barrier.call === property && outside) await barrier.arrive();
        return method.apply(target, args);
      };
    },
  });
}
