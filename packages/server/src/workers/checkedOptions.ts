/*
 * Start-up checks of the workers' options (createReaper, idem.completer(), idem.workerPool()): a
 * value that would make a worker do nothing, spin, or take over records it cannot run is refused
 * when the worker is made, naming the option, never found later in a report.
 */

/**
 * The longest a timer can wait: `setTimeout` fires after 1 ms instead when given more, which
 * would turn a worker's interval into a loop on the database.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * `value` if it is a number (an integer when `integer`) from `min` to `max`; else a `TypeError`
 * such as "createReaper: batchSize must be an integer from 1, got 0".
 */
export function checkedNumber(
  worker: string,
  name: string,
  value: number,
  min: number,
  integer: boolean,
  max = Number.POSITIVE_INFINITY,
): number {
  const valid = integer ? Number.isSafeInteger(value) : Number.isFinite(value);
  if (!valid || value < min || value > max) {
    const range = max === Number.POSITIVE_INFINITY ? `from ${min}` : `from ${min} to ${max}`;
    throw new TypeError(
      `${worker}: ${name} must be ${integer ? 'an integer' : 'a number'} ${range}, got ${value}`,
    );
  }
  return value;
}

/** Milliseconds from `min` that a worker's timer waits (its interval, its polling). */
export function checkedTimerMs(worker: string, name: string, value: number, min: number): number {
  return checkedNumber(worker, name, value, min, false, MAX_TIMER_MS);
}

/**
 * The `procedures` a worker runs: all of `eligible` (the router's procedures of the kind the
 * worker runs) when none are listed, else the listed ones, each checked to be one of them. A path
 * outside them (a typo, a renamed procedure, one of another mode) would have its records taken
 * over and fail every run until the poison cap hands them to operators.
 */
export function checkedProcedures(
  worker: string,
  listed: readonly string[] | undefined,
  eligible: readonly string[],
  kind: string,
): readonly string[] {
  if (listed === undefined) return eligible;
  const unknown = listed.filter((path) => !eligible.includes(path));
  if (unknown.length > 0) {
    throw new TypeError(
      `${worker}: procedures lists ${unknown.join(', ')}, not ${kind} of the router (${eligible.length > 0 ? `those are: ${eligible.join(', ')}` : 'it has none'})`,
    );
  }
  return listed;
}
