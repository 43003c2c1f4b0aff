import type { ClaimResult } from '@idem/contract';
import type { IdemJob } from '../request/IdemJob.js';

/** Claims the job's key (in `tx` when given), timed and in an `idem.claim` span. */
export async function claimWithTelemetry(
  job: IdemJob,
  extra: { lockTimeoutMs?: number } = {},
  tx?: unknown,
): Promise<ClaimResult> {
  const { telemetry, store } = job.runtime;
  const started = performance.now();
  try {
    return await telemetry.span('idem.claim', { 'idem.procedure': job.claim.procedure }, () =>
      store.claim({ ...job.claim, ...extra }, tx),
    );
  } finally {
    telemetry.claimDuration(performance.now() - started, job.claim.procedure);
  }
}
