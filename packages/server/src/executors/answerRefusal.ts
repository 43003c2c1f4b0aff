import { RETRY_AFTER_HEADER } from '@idem/contract';
import { isIdemRequestError } from '../errors/IdemRequestError.js';
import type { IdemResponse } from '../types/IdemRequest.js';
import type { IdemJob, IdemRuntime } from '../types/IdemJob.js';

/** The parts of a job a refusal's answer needs: known before the job is complete (per request). */
export interface RefusalTarget {
  runtime: Pick<IdemRuntime, 'emit'>;
  event: IdemJob['event'];
  request: { response: Pick<IdemResponse, 'headers'> };
}

/**
 * The one place a request's refusal is answered (per request; `runRequest` calls it with what
 * the job threw): for an error idem refused with (`data.idem`), records `store-error` with the
 * store's error when the store failed, then `rejected`, and sets Retry-After, in whole seconds,
 * when the client is asked to wait. Any other error passes untouched.
 */
export function answerRefusal(target: RefusalTarget, error: unknown): void {
  const cause = (error as { cause?: unknown } | null)?.cause;
  if (!isIdemRequestError(cause)) return;
  const { reason, retryAfterMs, operationId } = cause.data;
  if (reason === 'IDEMPOTENCY_STORE_UNAVAILABLE') {
    target.runtime.emit({
      ...target.event,
      type: 'store-error',
      operationId: null,
      error: cause.cause,
    });
  }
  target.runtime.emit({
    ...target.event,
    type: 'rejected',
    reason,
    operationId: operationId ?? null,
  });
  if (retryAfterMs !== undefined) {
    target.request.response.headers.set(
      RETRY_AFTER_HEADER,
      String(Math.max(1, Math.ceil(retryAfterMs / 1000))),
    );
  }
}
