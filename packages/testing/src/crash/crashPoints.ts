/**
 * Where the crash points gate kills the process running the procedure, with SIGKILL:
 *
 * - `before-intent`: an external step is about to record its intent (everything before it has
 *   committed; nothing of the step has);
 * - `after-intent`: the intent committed, the downstream was not called yet;
 * - `after-call`: the downstream call returned, its result is not recorded yet;
 * - `before-complete`: the last step committed, the outcome is not written yet;
 * - `after-complete`: the outcome committed, the response was not sent.
 *
 * The first three come once per external step of the procedure.
 */
export type CrashBoundary =
  'before-intent' | 'after-intent' | 'after-call' | 'before-complete' | 'after-complete';

/** One crash point: a boundary, and for the first three the external step it belongs to. */
export interface CrashPoint {
  boundary: CrashBoundary;
  /** The external step's name (`ctx.idem.external(name, ...)`), for the step boundaries. */
  step?: string;
}

/** The boundaries that belong to an external step, in the order a step passes them. */
export const STEP_BOUNDARIES = ['before-intent', 'after-intent', 'after-call'] as const;

/** `after-call charge`, `before-complete`: how the gate names a crash point. */
export function crashPointName(point: CrashPoint): string {
  return point.step === undefined ? point.boundary : `${point.boundary} "${point.step}"`;
}

/** What a crash point means, in a sentence of the gate's messages. */
export function describeCrashPoint(point: CrashPoint): string {
  const step = `step "${point.step}"`;
  switch (point.boundary) {
    case 'before-intent':
      return `a crash before the intent of ${step}`;
    case 'after-intent':
      return `a crash after the intent of ${step}, before its call`;
    case 'after-call':
      return `a crash after the call of ${step}, before its result was recorded`;
    case 'before-complete':
      return 'a crash after the last step, before the outcome was written';
    case 'after-complete':
      return 'a crash after the outcome was written, before the response';
  }
}

/** The crash points of a procedure whose external steps are `steps`, in the order they pass. */
export function crashPointsOf(steps: readonly string[]): CrashPoint[] {
  return [
    ...steps.flatMap((step) => STEP_BOUNDARIES.map((boundary) => ({ boundary, step }))),
    { boundary: 'before-complete' },
    { boundary: 'after-complete' },
  ];
}
