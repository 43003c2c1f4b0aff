import type {
  OperationResultEnvelope,
  OperationResultObservable,
  TRPCClientError,
} from '@trpc/client';
import type { AnyTRPCRouter } from '@trpc/server';
import type { AttemptContext } from '../retry/runWithRetries.js';

/** What a query or mutation observable delivers. */
export type Envelope<TRouter extends AnyTRPCRouter> = OperationResultEnvelope<
  unknown,
  TRPCClientError<TRouter>
>;

/**
 * One attempt's observable (a query or mutation: one envelope, then complete) as a promise.
 * Unsubscribes, which cancels the request, when the attempt is aborted: `onAbort` is the
 * attempt's {@link AttemptContext.onAbort}, so no AbortSignal is made or listened to for this.
 */
export function firstEnvelope<TRouter extends AnyTRPCRouter>(
  result$: OperationResultObservable<TRouter, unknown>,
  onAbort: AttemptContext['onAbort'],
): Promise<Envelope<TRouter>> {
  return new Promise((resolve, reject) => {
    let envelope: Envelope<TRouter> | undefined;
    const subscription = result$.subscribe({
      next: (value) => {
        envelope = value;
      },
      error: reject,
      complete: () =>
        envelope ? resolve(envelope) : reject(new Error('the link completed without a result')),
    });
    onAbort((reason) => {
      subscription.unsubscribe();
      reject(reason);
    });
  });
}
