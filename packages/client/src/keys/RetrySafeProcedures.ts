import type { AnyTRPCProcedure, AnyTRPCRouter } from '@trpc/server';
import type {
  HasIdemMark,
  HasRetrySafeMark,
  ProcedureAtPath,
  ProcedureTypeAt,
  Spelled,
} from './IdempotentProcedures.js';

/**
 * Whether a procedure is a mutation safe to retry by nature: a mutation whose error shape carries
 * the mark `@idem/server`'s `retrySafe()` adds, and not idem's (a mutation with both is refused:
 * see `ConflictingMarkPath`).
 */
export type IsRetrySafeMutation<TProcedure> = TProcedure extends { _def: { type: 'mutation' } }
  ? HasRetrySafeMark<TProcedure> extends true
    ? HasIdemMark<TProcedure> extends true
      ? false
      : true
    : false
  : false;

/** Whether `T` is `any`: the only type that `1 & T` leaves open to `0`. */
type IsAny<T> = 0 extends 1 & T ? true : false;

/** An untyped router (`AnyTRPCRouter`, whose record is `any`) has no paths to list. */
type RetrySafeInRouter<TRecord, TWanted extends boolean> =
  IsAny<TRecord> extends true ? never : RetrySafeIn<TRecord, '', TWanted>;

type RetrySafeIn<TRecord, TPrefix extends string, TWanted extends boolean> = {
  [TKey in keyof TRecord & string]: TRecord[TKey] extends AnyTRPCProcedure
    ? IsRetrySafeMutation<TRecord[TKey]> extends TWanted
      ? `${TPrefix}${TKey}`
      : never
    : TRecord[TKey] extends object
      ? RetrySafeIn<TRecord[TKey], `${TPrefix}${TKey}.`, TWanted>
      : never;
}[keyof TRecord & string];

/**
 * The union of the paths of every mutation of `TRouter` marked `retrySafe()` on the server, such
 * as `'cart.removeItem'`. Derived from the router type: nothing to keep in sync.
 */
export type RetrySafePath<TRouter extends AnyTRPCRouter> = RetrySafeInRouter<
  TRouter['_def']['record'],
  true
>;

/** Paths of the router's procedures that are not retry-safe mutations. */
export type NotRetrySafePath<TRouter extends AnyTRPCRouter> = RetrySafeInRouter<
  TRouter['_def']['record'],
  false
>;

/** What a list entry for a procedure that is not a retry-safe mutation is told. */
type NotRetrySafeEntry<
  TPath extends string,
  TType extends string,
  TIdempotent extends boolean,
> = TType extends 'mutation'
  ? TIdempotent extends true
    ? `${TPath} takes an idempotency key (idem.procedure()): list it under idempotent, not retrySafe`
    : `${TPath} is a mutation without retrySafe(): a retry could run it twice; remove it from this list`
  : `${TPath} is a ${TType}, not a retry-safe mutation; remove it from this list`;

/**
 * One entry (`true`) per mutation of `TRouter` marked `retrySafe()` on the server, no more, no
 * fewer: the link retries those without a key. Checked against the router however the list is
 * written (inline, in a `const`, spread together):
 *
 * - a retry-safe mutation the list forgets: "Property 'cart.removeItem' is missing";
 * - another procedure of the router (an idempotent, plain or `retryUnsafe` mutation, a query):
 *   its entry's type reads "orders.cancel is a mutation without retrySafe(): ...", and no value
 *   but `undefined` (absent) is assignable to it. Retried without a key, such a mutation could
 *   run twice;
 * - a path that is nowhere in the router: "Object literal may only specify known properties"
 *   (inline lists only; such an entry never matches a call).
 */
export type RetrySafeProcedures<TRouter extends AnyTRPCRouter> = Spelled<{
  [TPath in RetrySafePath<TRouter>]: true;
}> &
  Spelled<{
    [TPath in NotRetrySafePath<TRouter>]?: NotRetrySafeEntry<
      TPath,
      ProcedureTypeAt<TRouter, TPath>,
      HasIdemMark<ProcedureAtPath<TRouter, TPath>>
    >;
  }>;

/**
 * The `retrySafe` option as {@link idemLink} takes it: required when the router has retry-safe
 * mutations (so the list cannot forget one), optional otherwise.
 */
export type RetrySafeOption<TRouter extends AnyTRPCRouter> = [RetrySafePath<TRouter>] extends [
  never,
]
  ? { retrySafe?: RetrySafeProcedures<TRouter> }
  : { retrySafe: RetrySafeProcedures<TRouter> };
