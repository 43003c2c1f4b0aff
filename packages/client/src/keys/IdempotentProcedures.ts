import type { IdemErrorShapeMarker, RetrySafeErrorShapeMarker } from '@idem/contract';
import type { AnyTRPCProcedure, AnyTRPCRouter, inferProcedureInput } from '@trpc/server';

/** Whether `T` is `any`: the only type that `1 & T` leaves open to `0`. */
type IsAny<T> = 0 extends 1 & T ? true : false;

/**
 * The members of an error shape that carry the mark `$Field` in `data` for real (idem's
 * `data.idem`, `retrySafe()`'s `data.idemRetrySafe`). `Extract` alone is not enough: a root
 * `errorFormatter` whose shape or `data` is `any` matches every marker, and would make every
 * mutation of the router look idempotent or retry-safe (then retried with nothing on the server
 * to make that safe: a duplicate effect). Any `any` on the way to the mark counts as no mark.
 */
export type MarkedShapeIn<$Shape, $Field extends string, $Marker> = $Shape extends unknown
  ? IsAny<$Shape> extends true
    ? never
    : $Shape extends { data: infer $Data }
      ? IsAny<$Data> extends true
        ? never
        : $Data extends { [TKey in $Field]: infer $Mark }
          ? IsAny<$Mark> extends true
            ? never
            : Extract<$Shape, $Marker>
          : never
      : never
  : never;

/** The members of an error shape that carry idem's `data.idem` for real (see `MarkedShapeIn`). */
type IdemShapeIn<$Shape> = MarkedShapeIn<$Shape, 'idem', IdemErrorShapeMarker>;

/**
 * Whether a procedure's error shape carries `retrySafe()`'s mark (a member with
 * `data.idemRetrySafe`, for the compiler only; see `MarkedShapeIn` for `any`).
 */
export type HasRetrySafeMark<TProcedure> = TProcedure extends {
  _def: { $types: { errorShape: infer $Shape } };
}
  ? [MarkedShapeIn<$Shape, 'idemRetrySafe', RetrySafeErrorShapeMarker>] extends [never]
    ? false
    : true
  : false;

/** Whether a procedure's error shape carries idem's `data.idem` (see `IdemShapeIn`). */
export type HasIdemMark<TProcedure> = TProcedure extends {
  _def: { $types: { errorShape: infer $Shape } };
}
  ? [IdemShapeIn<$Shape>] extends [never]
    ? false
    : true
  : false;

/**
 * Whether a procedure is an idempotent mutation: a mutation whose error shape (a union of the
 * router's shape and one per `.errors()` formatter) has a member with `data.idem`, which
 * `@idem/server`'s procedure builder adds. One member is enough; a member that is `any`, or whose
 * `data` is `any`, is not one (see `IdemShapeIn`). A mutation also marked `retrySafe()` is not
 * one either: it is refused (see {@link ConflictingMarkPath}).
 */
export type IsIdempotentMutation<TProcedure> = TProcedure extends { _def: { type: 'mutation' } }
  ? HasIdemMark<TProcedure> extends true
    ? HasRetrySafeMark<TProcedure> extends true
      ? false
      : true
    : false
  : false;

/** Whether a procedure is a mutation marked both `idem.procedure()` and `retrySafe()`. */
type IsConflictingMutation<TProcedure> = TProcedure extends { _def: { type: 'mutation' } }
  ? HasIdemMark<TProcedure> extends true
    ? HasRetrySafeMark<TProcedure>
    : false
  : false;

type ConflictingIn<TRecord, TPrefix extends string> = {
  [TKey in keyof TRecord & string]: TRecord[TKey] extends AnyTRPCProcedure
    ? IsConflictingMutation<TRecord[TKey]> extends true
      ? `${TPrefix}${TKey}`
      : never
    : TRecord[TKey] extends object
      ? ConflictingIn<TRecord[TKey], `${TPrefix}${TKey}.`>
      : never;
}[keyof TRecord & string];

/**
 * Paths of mutations marked both `idem.procedure()` and `retrySafe()`: a mutation either takes a
 * key or is safe to retry by nature. {@link IdempotentProcedures} makes the client fail to
 * compile until the server drops one (the router audit refuses them too).
 */
export type ConflictingMarkPath<TRouter extends AnyTRPCRouter> = ConflictingIn<
  TRouter['_def']['record'],
  ''
>;

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
    : [IdemShapeIn<$Shape>] extends [never]
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

type NotIdempotentIn<TRecord, TPrefix extends string> = {
  [TKey in keyof TRecord & string]: TRecord[TKey] extends AnyTRPCProcedure
    ? IsIdempotentMutation<TRecord[TKey]> extends true
      ? never
      : IsConflictingMutation<TRecord[TKey]> extends true
        ? never
        : [MisplacedIdemType<TRecord[TKey]>] extends [never]
          ? `${TPrefix}${TKey}`
          : never
    : TRecord[TKey] extends object
      ? NotIdempotentIn<TRecord[TKey], `${TPrefix}${TKey}.`>
      : never;
}[keyof TRecord & string];

/**
 * Paths of the router's procedures that are not idempotent mutations: queries, subscriptions and
 * mutations without `idem.procedure()` (a `retrySafe` or `retryUnsafe` one included). {@link IdempotentProcedures}
 * gives each an optional entry that no value satisfies, so naming one in the list does not compile
 * however the list is written: inline, held in a `const`, or spread from another object. (An
 * object literal's excess-property check covers only the first.)
 */
export type NotIdempotentPath<TRouter extends AnyTRPCRouter> = NotIdempotentIn<
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
    ? IdemShapeIn<$Shape>
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
 * typed key function. The compiler checks it against the router, however the list is written
 * (inline, in a `const`, spread together):
 *
 * - a new idempotent procedure the list forgets: "Property 'payments.charge' is missing";
 * - another procedure of the router (a plain or `retryUnsafe` mutation, a query): its entry's
 *   type reads "orders.cancel is a mutation without idem.procedure(): ...", and no value is
 *   assignable to it. The link would otherwise key and retry it, and the server, with no idem
 *   middleware on it, would run it again. A `retrySafe` mutation's reads "... list it under
 *   retrySafe, not idempotent";
 * - a path that is nowhere in the router: "Object literal may only specify known properties"
 *   (inline lists only; such an entry never matches a call, so it changes nothing at run time);
 * - a key function whose input type is wrong: not assignable;
 * - `idem.procedure()` on a query or subscription of the router: "Property 'orders.list' is
 *   missing", whose required type reads "idem.procedure() is for mutations only: ...";
 * - a mutation with both `idem.procedure()` and `retrySafe()`: "Property 'orders.archive' is
 *   missing", whose required type reads "orders.archive has both idem.procedure() and
 *   retrySafe(): ...".
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
  } & {
    // A mutation with both idem.procedure() and retrySafe(): the same, until the server drops one.
    [
      TPath in ConflictingMarkPath<TRouter>
    ]: `${TPath} has both idem.procedure() and retrySafe(): drop retrySafe() if a second run could change anything, else drop idem.procedure()`;
  }
> &
  // Every other procedure: an optional entry that no value satisfies (but `undefined`, which the
  // link reads as absent), so a const or spread list cannot slip one in. A second object, so that
  // messages show the entries the list needs first.
  Spelled<{
    [TPath in NotIdempotentPath<TRouter>]?: NotIdempotentEntry<
      TPath,
      ProcedureTypeAt<TRouter, TPath>,
      HasRetrySafeMark<ProcedureAtPath<TRouter, TPath>>
    >;
  }>;

/** What a list entry for a procedure that is not an idempotent mutation is told. */
type NotIdempotentEntry<
  TPath extends string,
  TType extends string,
  TRetrySafe extends boolean,
> = TType extends 'mutation'
  ? TRetrySafe extends true
    ? `${TPath} is retry-safe (retrySafe()) and takes no key: list it under retrySafe, not idempotent`
    : `${TPath} is a mutation without idem.procedure(): the server would run every retry again; remove it from this list`
  : `${TPath} is a ${TType}, not an idempotent mutation; remove it from this list`;

/** The type of the procedure at `TPath` (`'mutation'`, `'query'`, `'subscription'`). */
export type ProcedureTypeAt<TRouter extends AnyTRPCRouter, TPath extends string> =
  ProcedureAtPath<TRouter, TPath> extends { _def: { type: infer $Type extends string } }
    ? $Type
    : 'procedure';

/**
 * The same object type, spelled out: compiler messages then show the expected entries
 * (`{ "orders.create": true | ...; "payments.charge": ... }`) rather than the router's type.
 */
export type Spelled<T> = T extends infer $Object
  ? { [TKey in keyof $Object]: $Object[TKey] }
  : never;
