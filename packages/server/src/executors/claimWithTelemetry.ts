import type { ClaimResult } from '@idem/contract';
import type { IdemJob } from '../types/IdemJob.js';

/**
 * Runs `decide`, the statement that decides the job's key (a claim, or at commit the read of the
 * key), timed as `idem.server.claim.duration` and in an `idem.claim` span.
 */
export async function timedClaim<T>(job: IdemJob, decide: () => Promise<T>): Promise<T> {
  const { telemetry } = job.runtime;
  const started = performance.now();
  try {
    return await telemetry.span('idem.claim', { 'idem.procedure': job.claim.procedure }, decide);
  } finally {
    telemetry.claimDuration(performance.now() - started, job.claim.procedure);
  }
}

/** Claims the job's key (in `tx` when given), timed and in an `idem.claim` span. */
export function claimWithTelemetry(
  job: IdemJob,
  extra: { lockTimeoutMs?: number } = {},
  tx?: unknown,
): Promise<ClaimResult> {
  return timedClaim(job, () => job.runtime.store.claim({ ...job.claim, ...extra }, tx));
}
