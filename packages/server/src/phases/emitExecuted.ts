import type { IdemJob } from '../request/IdemJob.js';

/** Emits the `executed` event of a request that ran the procedure. */
export function emitExecuted(
  job: IdemJob,
  operationId: string | null,
  outcome: 'completed' | 'failed' | 'released' | 'discarded' | 'unsettled' | 'rolled-back',
  takeover: boolean,
  started: number,
): void {
  job.runtime.emit({
    ...job.event,
    type: 'executed',
    outcome,
    operationId,
    takeover,
    durationMs: Date.now() - started,
  });
}
