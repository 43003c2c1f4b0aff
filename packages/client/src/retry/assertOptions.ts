/** Option checks shared by the link and the backoffs: nonsense fails at configuration time. */

/** An integer >= 1 (attempt counts). */
export function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`${name} must be an integer >= 1, got ${value}`);
  }
  return value;
}

/** A finite number of milliseconds > 0 (timeouts, deadlines). */
export function positiveMs(name: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0) {
    throw new RangeError(`${name} must be a finite number of milliseconds > 0, got ${value}`);
  }
  return value;
}

/**
 * The longest a timer can wait: `setTimeout` fires after 1 ms instead when given more, in Node and
 * in browsers alike, which would turn a long timeout into an immediate one.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/** Milliseconds > 0 that a timer waits for (attempt timeouts, deadlines, polling). */
export function timerMs(name: string, value: number): number {
  positiveMs(name, value);
  if (value > MAX_TIMER_MS) {
    throw new RangeError(
      `${name} must be at most ${MAX_TIMER_MS} ms (the longest a timer can wait), got ${value}`,
    );
  }
  return value;
}

/** A finite number of milliseconds >= 0 (backoff bounds). */
export function nonNegativeMs(name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) {
    throw new RangeError(`${name} must be a finite number of milliseconds >= 0, got ${value}`);
  }
  return value;
}
