/** One thing that went wrong at one crash point. */
export interface CrashProblem {
  /** The crash point (`after-call "charge"`), `no crash`, or `every point`. */
  point: string;
  /** What recovered the crash: the client's retry or the completer; null for the whole run. */
  recovery: 'retry' | 'completer' | null;
  expected: string;
  happened: string;
  /** The likely cause, phrased as what to check. */
  cause: string;
}

/**
 * Thrown by the crash points gate: the procedure, where it ran, and each problem with its crash
 * point, what was expected, what happened and the likely cause. Check it with
 * {@link isCrashPointsGateError} (a brand, so it works across two installed copies).
 */
export class CrashPointsGateError extends Error {
  readonly isCrashPointsGateError = true;
  constructor(
    /** The procedure's path. */
    readonly path: string,
    /** `PGlite` or `PostgreSQL`. */
    readonly database: string,
    readonly problems: readonly CrashProblem[],
  ) {
    super(
      [
        `@idem/testing: crash points gate failed for ${path} on ${database} (${problems.length} problem${problems.length === 1 ? '' : 's'}):`,
        ...problems.map(
          (p, i) =>
            `${i + 1}. ${p.point}${p.recovery ? `, recovered by ${p.recovery === 'retry' ? 'a retry' : 'the completer'}` : ''}: expected ${p.expected}; ${p.happened}. Likely cause: ${p.cause}.`,
        ),
      ].join('\n'),
    );
    this.name = 'CrashPointsGateError';
  }
}

/** Whether `error` is a {@link CrashPointsGateError}. */
export function isCrashPointsGateError(error: unknown): error is CrashPointsGateError {
  return (error as { isCrashPointsGateError?: unknown } | null)?.isCrashPointsGateError === true;
}
