import { TRPCError } from '@trpc/server';
import type { Fence, ReconciliationReason, RecoveryStore } from '@idem/contract';
import { LostOwnershipError, OutcomeUnknownError } from '../errors/idemErrors.js';
import { classifyHandlerFailure } from './classifyHandlerFailure.js';
import type { IdemJob } from '../types/IdemJob.js';
import { parseSteps, type StepRecord, type Steps } from './steps.js';
import { raceSignal, timeLimitError, withTimeLimit } from './callTimeLimit.js';
import { stepResultCodec } from './stepResultCodec.js';
import type { ExternalStep, LookupResult, PhaseTools } from '../types/IdemExecution.js';

/** The time limit of an external step without `timeoutMs`: half the procedure's lease. */
export function defaultCallTimeLimitMs(leaseMs: number): number {
  return Math.max(1, Math.floor(leaseMs / 2));
}

/** The state of one external-mode attempt (per request). */
export class PhasedExecution<TTx> implements PhaseTools<TTx> {
  readonly recoveryPoint: string | null;
  lost = false;
  /** Set when a call's outcome became unknown: how the record must be left. */
  unsettled: 'OUTCOME_UNKNOWN' | 'NEEDS_RECONCILIATION' | null = null;
  /** Why, when `unsettled` is NEEDS_RECONCILIATION. */
  unsettledReason: ReconciliationReason | undefined;
  readonly #steps: Steps;
  readonly #seen = new Set<string>();
  readonly #codec: ReturnType<typeof stepResultCodec>;

  constructor(
    private readonly job: IdemJob,
    private readonly store: RecoveryStore<TTx>,
    private readonly fence: Fence,
    private readonly operationId: string,
    record: { steps: string | null; recoveryPoint: string | null },
  ) {
    this.#steps = parseSteps(record.steps);
    this.recoveryPoint = record.recoveryPoint;
    this.#codec = stepResultCodec(job);
  }

  async phase<T>(name: string, fn: (tx: TTx) => Promise<T>): Promise<T> {
    const done = this.#begin(name);
    if (done) return done.value as T;
    return this.#span('idem.phase', name, () =>
      this.store.transaction(async (tx) => {
        const value = await fn(tx);
        await this.#save(name, { status: 'done', result: this.#codec.encode(value) }, { tx });
        return value;
      }),
    );
  }

  async external<T>(name: string, step: ExternalStep<T>): Promise<T> {
    const done = this.#begin(name);
    if (done) return done.value as T;
    return this.#span('idem.external', name, () => this.#external(name, step));
  }

  #span<T>(span: string, step: string, fn: () => Promise<T>): Promise<T> {
    const attributes = {
      'idem.procedure': this.job.claim.procedure,
      'idem.step': step,
      'idem.operation_id': this.operationId,
    };
    return this.job.runtime.telemetry.span(span, attributes, fn);
  }

  async #external<T>(name: string, step: ExternalStep<T>): Promise<T> {
    const timeLimitMs = step.timeoutMs ?? defaultCallTimeLimitMs(this.job.options.leaseMs);
    if (!Number.isSafeInteger(timeLimitMs) || timeLimitMs < 1) {
      throw new TypeError(`idem: timeoutMs of step "${name}" must be a positive integer`);
    }
    if (this.#steps[name]?.status === 'intent') {
      // An earlier attempt may have called: ask before calling again. The takeover that made us
      // the owner waited until that call could no longer be in flight.
      if (!step.lookup) {
        this.#unsettle('NEEDS_RECONCILIATION', 'no_lookup');
        throw new OutcomeUnknownError(name, 'operator');
      }
      const lookup = step.lookup;
      let found: LookupResult<T>;
      try {
        // A lookup may use the whole lease it runs under: should it outlast it, a new owner may
        // take over, and this worker's fenced intent below then stops it before any call.
        found = await withTimeLimit(this.job.options.leaseMs, (signal) =>
          lookup(this.operationId, { signal }),
        );
      } catch (cause) {
        this.#unsettle('OUTCOME_UNKNOWN');
        throw new OutcomeUnknownError(name, 'lookup', { cause });
      }
      if (found.found) {
        await this.#save(
          name,
          { status: 'done', result: this.#codec.encode(found.result) },
          { callSettled: true },
        );
        return found.result;
      }
    }
    // The call's own fence: this worker still owns the record, and its lease now outlasts the
    // call. A stale worker (taken over while it waited) stops here, without calling.
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(timeLimitError(name)), timeLimitMs);
    try {
      await this.#save(name, { status: 'intent' }, { irreversible: true, timeLimitMs });
    } catch (error) {
      clearTimeout(timer);
      throw error; // lost ownership, or the store failed: nothing was called
    }
    let value: T;
    try {
      if (controller.signal.aborted) {
        // The intent write itself outlasted the time limit: too late to call safely now.
        throw controller.signal.reason;
      }
      value = await raceSignal(
        step.call(this.operationId, { signal: controller.signal }),
        controller.signal,
      );
    } catch (error) {
      // A definite refusal (a 4xx TRPCError: card declined) means nothing happened remotely.
      if (
        error instanceof TRPCError &&
        classifyHandlerFailure(error, 'deterministic').kind === 'deterministic'
      ) {
        throw error;
      }
      this.#unsettle(step.lookup ? 'OUTCOME_UNKNOWN' : 'NEEDS_RECONCILIATION', 'no_lookup');
      throw new OutcomeUnknownError(name, step.lookup ? 'lookup' : 'operator', { cause: error });
    } finally {
      clearTimeout(timer);
    }
    await this.#save(
      name,
      { status: 'done', result: this.#codec.encode(value) },
      { callSettled: true },
    );
    return value;
  }

  #unsettle(state: 'OUTCOME_UNKNOWN' | 'NEEDS_RECONCILIATION', reason?: ReconciliationReason) {
    this.unsettled = state;
    this.unsettledReason = state === 'NEEDS_RECONCILIATION' ? reason : undefined;
  }

  async heartbeat(): Promise<void> {
    if (!(await this.store.extendLease(this.fence, this.job.options.leaseMs))) {
      this.lost = true;
      throw new LostOwnershipError('heartbeat');
    }
  }

  /** Checks the step name; returns the recorded result of a step an earlier attempt finished. */
  #begin(name: string): { value: unknown } | undefined {
    if (name.length === 0 || name.length > 64)
      throw new TypeError('idem: a step name is 1 to 64 characters');
    if (this.#seen.has(name))
      throw new TypeError(
        `idem: step "${name}" ran twice in one attempt; step names must be unique`,
      );
    this.#seen.add(name);
    const recorded = this.#steps[name];
    if (recorded?.status === 'done') {
      return { value: this.#codec.decode(recorded.result ?? '') };
    }
    return undefined;
  }

  async #save(
    name: string,
    step: StepRecord,
    options: { tx?: TTx; irreversible?: boolean; timeLimitMs?: number; callSettled?: boolean },
  ): Promise<void> {
    this.#steps[name] = step;
    const saved = await this.store.saveSteps(
      this.fence,
      {
        steps: JSON.stringify(this.#steps),
        recoveryPoint: step.status === 'done' ? name : `${name}:intent`,
        leaseMs: this.job.options.leaseMs,
        irreversible: options.irreversible ?? false,
        ...(options.timeLimitMs !== undefined ? { callTimeLimitMs: options.timeLimitMs } : {}),
        ...(options.callSettled ? { callSettled: true } : {}),
      },
      options.tx,
    );
    if (!saved) {
      this.lost = true;
      throw new LostOwnershipError(name);
    }
  }
}
