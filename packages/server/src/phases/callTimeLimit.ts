/** Time limits of external calls and lookups: a signal that fires, and no wait past it. */
export function timeLimitError(step: string): Error {
  const error = new Error(`idem: the external step "${step}" reached its time limit (timeoutMs)`);
  error.name = 'TimeoutError';
  return error;
}

/** Runs `fn` with a signal that fires after `ms`, and stops waiting for it then. */
export async function withTimeLimit<T>(
  ms: number,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(timeLimitError('lookup')), ms);
  try {
    return await raceSignal(fn(controller.signal), controller.signal);
  } finally {
    clearTimeout(timer);
  }
}

/** `promise`, or a rejection with the signal's reason once it fires (whichever comes first). */
export function raceSignal<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
