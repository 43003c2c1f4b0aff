/**
 * Time as the retry loop sees it. Inject one to test deadlines and backoff without real sleeps;
 * the default is {@link systemClock}.
 */
export interface RetryClock {
  /** Milliseconds since the epoch. Used for the deadline and HTTP-date `Retry-After` values. */
  now(): number;
  /**
   * Resolves after `ms` milliseconds. Rejects with `signal.reason` as soon as `signal` aborts
   * (including when it already has), so an abort ends a backoff sleep at once.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The real clock: `Date.now()` and `setTimeout`. */
export const systemClock: RetryClock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};
