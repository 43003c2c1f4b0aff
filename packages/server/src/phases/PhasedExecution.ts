import { TRPCError } from '@trpc/server';
import type { Fence, ReconciliationReason, RecoveryStore } from '@idem/contract';
import { LostOwnershipError, OutcomeUnknownError } from '../errors/idemErrors.js';
import { classifyHandlerFailure } from './classifyHandlerFailure.js';
import type { IdemJob } from '../request/IdemJob.js';
import { parseSteps, type StepRecord, type Steps } from './steps.js';
import { raceSignal, timeLimitError, withTimeLimit } from './callTimeLimit.js';
import { stepResultCodec } from './stepResultCodec.js';

/** What a lookup by operation id found at the remote system. */
export type LookupResult<T> = { found: true; result: T } | { found: false };

/** What a call or lookup of an external step receives besides the operation id. */
export interface ExternalCallOptions {
  /**
   * Fires when the step's time limit (`timeoutMs`) is reached, before the lease it runs under
   * lapses. Pass it to `fetch` (or your client's equivalent): once it fired, idem no longer waits
   * for the call, and a call still in flight after `timeoutMs` more could race a new owner.
   */
  signal: AbortSignal;
}

/** An external call and how to ask the remote system whether it already happened. */
export interface ExternalStep<T> {
  /**
   * Makes the call. Pass `operationId` downstream as its idempotency key, and `signal` to the
   * request. Runs only right after a fenced write confirmed this worker still owns the record and
   * extended its lease to cover `timeoutMs` (plus one lease for recording the result).
   */
  call(operationId: string, options: ExternalCallOptions): Promise<T>;
  /**
   * Asks the remote system, by `operationId`, whether an earlier call was received. Without it, a
   * call whose outcome is unknown goes to manual reconciliation and is never retried by chance.
   * It runs only once no earlier call can still be in flight, so "not found" means "not
   * received". Its signal fires after the procedure's `leaseMs` (the lease it runs under).
   */
  lookup?(operationId: string, options: ExternalCallOptions): Promise<LookupResult<NoInfer<T>>>;
  /**
   * The time limit of one call, in milliseconds: `signal` fires then, and a call that has not
   * answered counts as an unknown outcome. The record cannot be taken over
   * until the lease plus this limit has passed after the call began. Defaults to half the
   * procedure's `leaseMs` (15 000 ms with the default 30 s lease).
   */
  timeoutMs?: number;
}

/** The time limit of an external step without `timeoutMs`: half the procedure's lease. */
export function defaultCallTimeLimitMs(leaseMs: number): number {
  return Math.max(1, Math.floor(leaseMs / 2));
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
   * Runs an external call once: records the intent first (a fenced write that also extends the
   * lease over the call's time limit), then calls, then records the result. If an earlier attempt
   * recorded the intent but not the result, the outcome is unknown: the remote is asked first
   * (`lookup`), and only a confirmed "not received" calls again, after another fenced intent.
   */
  external<T>(name: string, step: ExternalStep<T>): Promise<T>;
  /** Extends the lease by the procedure's `leaseMs` (for long phases). */
  heartbeat(): Promise<void>;
  /** The last committed step when this attempt started, or null. */
  readonly recoveryPoint: string | null;
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
