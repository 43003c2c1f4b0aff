/** Throws a RangeError unless `value` is an integer number of milliseconds in `[min, max]`. */
export function assertMilliseconds(
  name: string,
  value: number,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): void {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new RangeError(
      `${name} must be an integer number of milliseconds from ${min} to ${max}, got ${value}`,
    );
  }
}

/** The largest row count a statement's LIMIT takes (a PostgreSQL integer). */
const MAX_LIMIT = 2_147_483_647;

/** Throws a RangeError unless `value` is a row count from 1 to 2^31 - 1. */
export function assertLimit(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 1 || value > MAX_LIMIT) {
    throw new RangeError(`${name} must be an integer from 1 to ${MAX_LIMIT}, got ${value}`);
  }
}

/** Throws a RangeError unless `value` is a takeover cap: an integer from 0 to 2^31 - 1. */
export function assertMaxTakeovers(value: number): void {
  if (!Number.isSafeInteger(value) || value < 0 || value > MAX_LIMIT) {
    throw new RangeError(`maxTakeovers must be an integer from 0 to ${MAX_LIMIT}, got ${value}`);
  }
}

/**
 * Throws a TypeError unless `id` is a record id as the store hands it out: a positive decimal
 * bigint. Returns it, to be sent as a parameter and cast to bigint by the statement.
 */
export function recordId(id: string): string {
  if (!/^[1-9][0-9]{0,18}$/.test(id)) {
    throw new TypeError(
      `a record id is a positive decimal integer string, got ${JSON.stringify(id)}`,
    );
  }
  return id;
}

/** Throws a RangeError unless a stored response's windows are whole milliseconds from 0. */
export function assertWindows(response: { replayWindowMs: number; retentionMs: number }): void {
  assertMilliseconds('replayWindowMs', response.replayWindowMs, 0);
  assertMilliseconds('retentionMs', response.retentionMs, 0);
}
