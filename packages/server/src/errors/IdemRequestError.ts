import { TRPCError } from '@trpc/server';
import { IDEM_REASON_TABLE, type IdemErrorData, type IdemReason } from '@idem/contract';

/**
 * The cause idem attaches to every `TRPCError` it raises, carrying the typed `data.idem` the
 * client reads. Branded, so the check survives two installed copies of this package. Its own
 * `cause`, for a store failure, is the store's error: for the event hook, never on the wire.
 */
export class IdemRequestError extends Error {
  readonly isIdemRequestError = true;
  constructor(
    readonly data: IdemErrorData,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'IdemRequestError';
  }
}

/** True for an {@link IdemRequestError}, from any copy of this package. */
export function isIdemRequestError(value: unknown): value is IdemRequestError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { isIdemRequestError?: unknown }).isIdemRequestError === true
  );
}

/** A `TRPCError` for an idem reason: its tRPC code and HTTP status come from the reason table. */
export function idemTRPCError(
  reason: IdemReason,
  message: string,
  extra: Omit<IdemErrorData, 'reason'> = {},
  options?: { cause?: unknown },
): TRPCError {
  const data: IdemErrorData = { reason, ...extra };
  return new TRPCError({
    code: IDEM_REASON_TABLE[reason].trpcCode,
    message,
    cause: new IdemRequestError(data, message, options),
  });
}

/** The `data.idem` of an error idem raised, or null. */
export function readIdemErrorCause(error: { cause?: unknown }): IdemErrorData | null {
  return isIdemRequestError(error.cause) ? error.cause.data : null;
}
