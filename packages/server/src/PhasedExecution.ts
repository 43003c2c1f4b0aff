import { TRPCError } from '@trpc/server';
import type { Fence, RecoveryStore } from '@idem/contract';
import { classifyFailure } from './classifyFailure.js';
import type { IdemJob } from './IdemJob.js';
import { parseSteps, type StepRecord, type Steps } from './steps.js';

/** What a lookup by operation id found at the remote system. */
export type LookupResult<T> = { found: true; result: T } | { found: false };

/** An external call and how to ask the remote system whether it already happened. */
export interface ExternalStep<T> {
  /** Makes the call. Pass `operationId` downstream as its idempotency key. */
  call(operationId: string): Promise<T>;
  /**
   * Asks the remote system, by `operationId`, whether an earlier call was received. Without it, a
   * call whose outcome is unknown goes to manual reconciliation and is never retried by chance.
   */
  lookup?(operationId: string): Promise<LookupResult<NoInfer<T>>>;
}

/**
 * `ctx.idem` helpers of an external-mode procedure. The handler runs from the top on every
 * attempt; steps already committed return their recorded result instead of running again.
 */
export interface PhaseTools<TTx> {
  /**
   * Runs a local phase: `fn`'s writes through `tx` and the recovery point commit together. A
   * phase committed by an earlier attempt is not run again; its recorded result is returned.
   */
  phase<T>(name: string, fn: (tx: TTx) => Promise<T>): Promise<T>;
  /**
   * Runs an external call once: records the intent first, then calls, then records the result.
   * If an earlier attempt recorded the intent but not the result, the outcome is unknown: the
   * remote is asked first (`lookup`), and only a confirmed "not received" calls again.
   */
  external<T>(name: string, step: ExternalStep<T>): Promise<T>;
  /** Extends the lease by the procedure's `leaseMs` (for long phases). */
  heartbeat(): Promise<void>;
  /** The last committed step when this attempt started, or null. */
  readonly recoveryPoint: string | null;
}

/** Raised inside the handler when this worker no longer owns the record (taken over, cancelled). */
export class LostOwnershipError extends Error {
  readonly isLostOwnershipError = true;
  constructor(step: string) {
    super(`idem: lost ownership of the record before step "${step}" committed; result discarded`);
  }
}

/** Raised when an external call's outcome is unknown and cannot be settled automatically now. */
export class OutcomeUnknownError extends Error {
  readonly isOutcomeUnknownError = true;
  constructor(
    readonly step: string,
    readonly settleBy: 'lookup' | 'operator',
    options?: { cause?: unknown },
  ) {
    super(
      settleBy === 'lookup'
        ? `the outcome of "${step}" is unknown; it will be looked up before anything runs again`
        : `the outcome of "${step}" is unknown and cannot be looked up; an operator must reconcile it`,
      options,
    );
  }
}

/** The state of one external-mode attempt (per request). */
export class PhasedExecution<TTx> implements PhaseTools<TTx> {
  readonly recoveryPoint: string | null;
  lost = false;
  /** Set when a call's outcome became unknown: how the record must be left. */
  unsettled: 'OUTCOME_UNKNOWN' | 'NEEDS_RECONCILIATION' | null = null;
  readonly #steps: Steps;
  readonly #seen = new Set<string>();

  constructor(
    private readonly job: IdemJob,
    private readonly store: RecoveryStore<TTx>,
    private readonly fence: Fence,
    private readonly operationId: string,
    record: { steps: string | null; recoveryPoint: string | null },
  ) {
    this.#steps = parseSteps(record.steps);
    this.recoveryPoint = record.recoveryPoint;
  }

  async phase<T>(name: string, fn: (tx: TTx) => Promise<T>): Promise<T> {
    const done = this.#begin(name);
    if (done) return done.value as T;
    return this.#span('idem.phase', name, () =>
      this.store.transaction(async (tx) => {
        const value = await fn(tx);
        await this.#save(name, { status: 'done', result: this.#serialize(value) }, tx);
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
    if (this.#steps[name]?.status === 'intent') {
      // An earlier attempt may have called: ask before calling again.
      if (!step.lookup) {
        this.unsettled = 'NEEDS_RECONCILIATION';
        throw new OutcomeUnknownError(name, 'operator');
      }
      let found: LookupResult<T>;
      try {
        found = await step.lookup(this.operationId);
      } catch (cause) {
        this.unsettled = 'OUTCOME_UNKNOWN';
        throw new OutcomeUnknownError(name, 'lookup', { cause });
      }
      if (found.found) {
        await this.#save(name, { status: 'done', result: this.#serialize(found.result) });
        return found.result;
      }
    } else {
      await this.#save(name, { status: 'intent' }, undefined, true);
    }
    let value: T;
    try {
      value = await step.call(this.operationId);
    } catch (error) {
      // A definite refusal (a 4xx TRPCError: card declined) means nothing happened remotely.
      if (
        error instanceof TRPCError &&
        classifyFailure(error, 'deterministic').kind === 'deterministic'
      ) {
        throw error;
      }
      this.unsettled = step.lookup ? 'OUTCOME_UNKNOWN' : 'NEEDS_RECONCILIATION';
      throw new OutcomeUnknownError(name, step.lookup ? 'lookup' : 'operator', { cause: error });
    }
    await this.#save(name, { status: 'done', result: this.#serialize(value) });
    return value;
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
      return { value: this.job.runtime.serializer.deserialize(recorded.result ?? '') };
    }
    return undefined;
  }

  #serialize(value: unknown): string {
    return this.job.runtime.serializer.serialize(value);
  }

  async #save(name: string, step: StepRecord, tx?: TTx, irreversible = false): Promise<void> {
    this.#steps[name] = step;
    const saved = await this.store.saveSteps(
      this.fence,
      {
        steps: JSON.stringify(this.#steps),
        recoveryPoint: step.status === 'done' ? name : `${name}:intent`,
        leaseMs: this.job.options.leaseMs,
        irreversible,
      },
      tx,
    );
    if (!saved) {
      this.lost = true;
      throw new LostOwnershipError(name);
    }
  }
}
