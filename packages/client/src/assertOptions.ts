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

/** A finite number of milliseconds >= 0 (backoff bounds). */
export function nonNegativeMs(name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) {
    throw new RangeError(`${name} must be a finite number of milliseconds >= 0, got ${value}`);
  }
  return value;
}
