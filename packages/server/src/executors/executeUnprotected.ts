import { IDEMPOTENCY_PROTECTED_HEADER, type RecoveryStore } from '@idem/contract';
import { storeUnavailable } from '../errors/idemErrors.js';
import { defaultCallTimeLimitMs } from '../phases/PhasedExecution.js';
import { raceSignal, timeLimitError } from '../phases/callTimeLimit.js';
import type { ExternalStep, IdemExecution, PhaseTools } from '../types/IdemExecution.js';
import type { IdemRequest } from '../types/IdemRequest.js';
import type { IdemRuntime, NextResult, ResolvedProcedureOptions } from '../types/IdemJob.js';

/** A call without a key to a procedure with `keys: 'optional'` (per request). */
export interface UnprotectedCall {
  runtime: IdemRuntime;
  options: ResolvedProcedureOptions;
  request: IdemRequest;
  scope: string;
  procedure: string;
  /** The call's own operation id: new on every call, since nothing ties a retry to it. */
  operationId: string;
  next(idem: object): Promise<NextResult>;
}

/** Thrown inside the transaction to roll a failed handler's writes back; never leaves this module. */
class Rollback {}

/**
 * Runs a call without a key as the procedure would run without idem: no claim, no replay, no
 * stored outcome. The call is counted (event `unprotected`, hence the metric) and its response
 * says so (`Idempotency-Protected: false`) before the handler runs, so every answer carries it.
 *
 * `ctx.idem` keeps its shape, so handler code written for idem runs unchanged, with
 * `protected: false`, an empty `keyHash` and `executions: 1`:
 * - local mode: `tx` is a transaction of the store's database around the handler, committed when
 *   it succeeds and rolled back when it fails (as with a key, minus the key and the result);
 * - external mode: `phase` runs its function in a transaction of its own, `external` makes the
 *   call at once with its time limit (no intent, no lookup: nothing records that it ran),
 *   `heartbeat` does nothing and `recoveryPoint` is null.
 */
export async function executeUnprotected(call: UnprotectedCall): Promise<NextResult> {
  const { runtime, options, request, operationId } = call;
  request.response.headers.set(IDEMPOTENCY_PROTECTED_HEADER, 'false');
  runtime.emit({
    type: 'unprotected',
    procedure: call.procedure,
    scope: call.scope,
    keyHash: '',
    operationId,
    requestId: request.requestId,
  });
  const execution: IdemExecution = {
    protected: false,
    operationId,
    keyHash: '',
    scope: call.scope,
    procedure: call.procedure,
    executions: 1,
    requestId: request.requestId,
    clientAttempt: request.attempt,
    remainingMs: () =>
      request.timeoutMs === null
        ? null
        : Math.max(0, request.timeoutMs - (Date.now() - request.receivedAt)),
  };
  if (options.mode === 'external') {
    return call.next({
      ...execution,
      ...directPhases(runtime.store, options.leaseMs, operationId),
    });
  }
  let result: NextResult | undefined;
  try {
    await runtime.store.transaction(async (tx) => {
      result = await call.next({ ...execution, tx });
      if (!result.ok) throw new Rollback();
    });
  } catch (error) {
    // The database failed around the handler (begin or commit): its writes did not commit.
    if (!(error instanceof Rollback)) throw storeUnavailable(error);
  }
  return result!;
}

/** External mode's step tools without a record: each step runs once, now, recording nothing. */
function directPhases<TTx>(
  store: RecoveryStore<TTx>,
  leaseMs: number,
  operationId: string,
): PhaseTools<TTx> {
  const seen = new Set<string>();
  // The same step-name rules as with a key, so a handler that breaks them fails either way.
  const begin = (name: string) => {
    if (name.length === 0 || name.length > 64)
      throw new TypeError('idem: a step name is 1 to 64 characters');
    if (seen.has(name))
      throw new TypeError(
        `idem: step "${name}" ran twice in one attempt; step names must be unique`,
      );
    seen.add(name);
  };
  return {
    recoveryPoint: null,
    async phase<T>(name: string, fn: (tx: TTx) => Promise<T>): Promise<T> {
      begin(name);
      return store.transaction(fn);
    },
    async external<T>(name: string, step: ExternalStep<T>): Promise<T> {
      begin(name);
      const timeLimitMs = step.timeoutMs ?? defaultCallTimeLimitMs(leaseMs);
      if (!Number.isSafeInteger(timeLimitMs) || timeLimitMs < 1) {
        throw new TypeError(`idem: timeoutMs of step "${name}" must be a positive integer`);
      }
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(timeLimitError(name)), timeLimitMs);
      try {
        return await raceSignal(
          step.call(operationId, { signal: controller.signal }),
          controller.signal,
        );
      } finally {
        clearTimeout(timer);
      }
    },
    async heartbeat(): Promise<void> {},
  };
}
