import type { IdemJob } from '../types/IdemJob.js';

/** Emits the `executed` event of a request that ran the procedure. */
export function emitExecuted(
  job: IdemJob,
  operationId: string | null,
  outcome: 'completed' | 'failed' | 'released' | 'discarded' | 'unsettled' | 'rolled-back',
  takeover: boolean,
  started: number,
): void {
  const { event } = job;
  // Written out rather than spread from `job.event`: once per request, and a literal of one shape
  // is what V8 builds fastest (in a CPU profile of a fresh request the spread took its slow path).
  job.runtime.emit({
    procedure: event.procedure,
    scope: event.scope,
    keyHash: event.keyHash,
    requestId: event.requestId,
    type: 'executed',
    outcome,
    operationId,
    takeover,
    durationMs: Date.now() - started,
  });
}
