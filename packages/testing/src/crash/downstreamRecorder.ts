import type { ExternalCallOptions, LookupResult } from '@idem/server';
import { memoryJournal, writeJournal } from './crashJournal.js';

/** A step's `call` or `lookup` function, as `ctx.idem.external` takes it. */
export type StepFunction<R> = (operationId: string, options: ExternalCallOptions) => Promise<R>;

/**
 * Counts the calls and lookups your fake downstream receives, by operation id, so the crash
 * points gate can tell a call made twice from a call found by its lookup. Wrap the functions you
 * give `ctx.idem.external`; the wrapped functions behave exactly like yours.
 *
 * ```ts
 * const recorder = downstreamRecorder();
 * await ctx.idem.external('charge', {
 *   call: recorder.call('charge', (operationId, { signal }) => processor.charge(operationId, signal)),
 *   lookup: recorder.lookup('charge', (operationId) => processor.find(operationId)),
 * });
 * ```
 */
export interface DownstreamRecorder {
  /**
   * Wraps a step's `call`: every call is written down (with its operation id) before `fn` runs,
   * so a call cut short by a crash still counts. `name` names the downstream in the gate's
   * messages (the step's name is a good choice).
   */
  call<R>(name: string, fn: StepFunction<R>): StepFunction<R>;
  /** Wraps a step's `lookup`: its answer (found or not, or a throw) is written down. */
  lookup<F extends StepFunction<LookupResult<unknown>>>(
    name: string,
    fn: F,
  ): StepFunction<Awaited<ReturnType<F>>>;
  /** Calls this process recorded for `operationId` (all when omitted), outside the crash gate. */
  calls(operationId?: string): number;
}

/**
 * The recorder of this process. In a crash gate's child it writes to the gate's journal (a file
 * that outlives the SIGKILL); anywhere else it keeps the counts in memory. One per process: call
 * it as often as you like.
 */
export function downstreamRecorder(): DownstreamRecorder {
  return recorder;
}

const recorder: DownstreamRecorder = {
  call(name, fn) {
    return async (operationId, options) => {
      writeJournal({ kind: 'call', name, operationId });
      return fn(operationId, options);
    };
  },
  lookup<F extends StepFunction<LookupResult<unknown>>>(name: string, fn: F) {
    const lookup = async (operationId: string, options: ExternalCallOptions) => {
      let found: LookupResult<unknown>;
      try {
        found = await fn(operationId, options);
      } catch (error) {
        writeJournal({ kind: 'lookup', name, operationId, found: 'threw' });
        throw error;
      }
      writeJournal({ kind: 'lookup', name, operationId, found: found.found });
      return found;
    };
    return lookup as StepFunction<Awaited<ReturnType<F>>>;
  },
  calls(operationId) {
    return memoryJournal().filter(
      (e) => e.kind === 'call' && (operationId === undefined || e.operationId === operationId),
    ).length;
  },
};
