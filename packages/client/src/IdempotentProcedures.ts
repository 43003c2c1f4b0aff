import type { IdemErrorShapeMarker } from '@idem/contract';
import type { AnyTRPCProcedure, AnyTRPCRouter, inferProcedureInput } from '@trpc/server';

/**
 * Whether a procedure is an idempotent mutation: a mutation whose error shape (a union of the
 * router's shape and one per `.errors()` formatter) has a member with `data.idem`, which
 * `@idem/server`'s procedure builder adds. `Extract`, not `extends`: one member is enough.
 */
export type IsIdempotentMutation<TProcedure> = TProcedure extends {
  _def: { type: 'mutation'; $types: { errorShape: infer $Shape } };
}
  ? [Extract<$Shape, IdemErrorShapeMarker>] extends [never]
    ? false
    : true
  : false;

type PathsIn<TRecord, TPrefix extends string> = {
  [TKey in keyof TRecord & string]: TRecord[TKey] extends AnyTRPCProcedure
    ? IsIdempotentMutation<TRecord[TKey]> extends true
      ? `${TPrefix}${TKey}`
      : never
    : TRecord[TKey] extends object
      ? PathsIn<TRecord[TKey], `${TPrefix}${TKey}.`>
      : never;
}[keyof TRecord & string];

/** The type (`'query'`, `'subscription'`) of a non-mutation that carries idem's error shape. */
type MisplacedIdemType<TProcedure> = TProcedure extends {
  _def: { type: infer $Type extends string; $types: { errorShape: infer $Shape } };
}
  ? $Type extends 'mutation'
    ? never
    : [Extract<$Shape, IdemErrorShapeMarker>] extends [never]
      ? never
      : $Type
  : never;

type MisplacedIn<TRecord, TPrefix extends string> = {
  [TKey in keyof TRecord & string]: TRecord[TKey] extends AnyTRPCProcedure
    ? [MisplacedIdemType<TRecord[TKey]>] extends [never]
      ? never
      : `${TPrefix}${TKey}`
    : TRecord[TKey] extends object
      ? MisplacedIn<TRecord[TKey], `${TPrefix}${TKey}.`>
      : never;
}[keyof TRecord & string];

/**
 * Paths of queries and subscriptions that `idem.procedure()` was concatenated into: they answer
 * 500 on every call, so {@link IdempotentProcedures} makes the client fail to compile until the
 * server is fixed.
 */
export type MisplacedIdemPath<TRouter extends AnyTRPCRouter> = MisplacedIn<
  TRouter['_def']['record'],
  ''
>;

type ProcedureAt<TRecord, TPath extends string> = TPath extends `${infer $Head}.${infer $Rest}`
  ? $Head extends keyof TRecord
    ? ProcedureAt<TRecord[$Head], $Rest>
    : never
  : TPath extends keyof TRecord
    ? TRecord[TPath]
    : never;

/**
 * The union of the paths of every idempotent mutation in `TRouter`, such as
 * `'orders.create' | 'payments.charge'`. Derived from the router type: nothing to keep in sync.
 */
export type IdempotentPath<TRouter extends AnyTRPCRouter> = PathsIn<TRouter['_def']['record'], ''>;

/** The procedure at `TPath` in `TRouter`. */
export type ProcedureAtPath<TRouter extends AnyTRPCRouter, TPath extends string> = ProcedureAt<
  TRouter['_def']['record'],
  TPath
>;

/** The input a caller passes to the idempotent mutation at `TPath` (before validation). */
export type IdempotentInput<TRouter extends AnyTRPCRouter, TPath extends IdempotentPath<TRouter>> =
  ProcedureAtPath<TRouter, TPath> extends infer $Procedure extends AnyTRPCProcedure
    ? inferProcedureInput<$Procedure>
    : never;

/**
 * The error shape of an idempotent mutation's errors that idem raised: its `data.idem` is
 * `IdemErrorData | null` (reason, retryAfterMs, operationId), typed from `@idem/contract`.
 */
export type IdempotentErrorShape<
  TRouter extends AnyTRPCRouter,
  TPath extends IdempotentPath<TRouter>,
> =
  ProcedureAtPath<TRouter, TPath> extends {
    _def: { $types: { errorShape: infer $Shape } };
  }
    ? Extract<$Shape, IdemErrorShapeMarker>
    : never;

/**
 * Derives the call's idempotency key from its input, for every call that brings no key of its
 * own. Called once per call, before the first attempt; every retry reuses the result. Derive it
 * from what identifies the intent (`order-confirm-${input.orderId}`), never from the time or a
 * random value.
 */
export type IdempotencyKeyFunction<TInput> = (input: TInput) => string;

/** What the link knows about one idempotent mutation. */
export interface IdempotentProcedureOptions<TInput> {
  /**
   * Derives the key from the input. Defaults to none: the caller's key
   * (`withIdempotencyKey`), else a random UUID made once per call and reused by its retries.
   */
  key?: IdempotencyKeyFunction<TInput>;
}

/**
 * One entry per idempotent mutation of `TRouter`, no more, no fewer: `true`, or options with a
 * typed key function. The compiler checks it against the router:
 *
 * - a new idempotent procedure the list forgets: "Property 'payments.charge' is missing";
 * - a path that is not an idempotent mutation: "Object literal may only specify known
 *   properties";
 * - a key function whose input type is wrong: not assignable;
 * - `idem.procedure()` on a query or subscription of the router: "Property 'orders.list' is
 *   missing", whose required type reads "idem.procedure() is for mutations only: ...".
 */
export type IdempotentProcedures<TRouter extends AnyTRPCRouter> = Spelled<
  {
    [TPath in IdempotentPath<TRouter>]:
      true | IdempotentProcedureOptions<IdempotentInput<TRouter, TPath>>;
  } & {
    // A query or subscription with idem.procedure(): a required entry that no value satisfies, so
    // the error message says what to fix on the server.
    [
      TPath in MisplacedIdemPath<TRouter>
    ]: `idem.procedure() is for mutations only: make ${TPath} a mutation or drop idem.procedure() from it`;
  }
>;

/**
 * The same object type, spelled out: compiler messages then show the expected entries
 * (`{ "orders.create": true | ...; "payments.charge": ... }`) rather than the router's type.
 */
type Spelled<T> = T extends infer $Object ? { [TKey in keyof $Object]: $Object[TKey] } : never;
