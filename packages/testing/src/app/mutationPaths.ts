import type {
  AnyTRPCMutationProcedure,
  AnyTRPCProcedure,
  AnyTRPCRouter,
  inferProcedureInput,
} from '@trpc/server';

type MutationPathsOf<TRecord, TPrefix extends string> = {
  [K in keyof TRecord & string]: TRecord[K] extends AnyTRPCProcedure
    ? TRecord[K] extends AnyTRPCMutationProcedure
      ? `${TPrefix}${K}`
      : never
    : TRecord[K] extends object
      ? MutationPathsOf<TRecord[K], `${TPrefix}${K}.`>
      : never;
}[keyof TRecord & string];

/** The dotted paths of a router's mutations: `'orders.create' | 'payments.create'`. */
export type MutationPath<TRouter extends AnyTRPCRouter> = MutationPathsOf<
  TRouter['_def']['record'],
  ''
>;

type ProcedureAt<TRecord, TPath extends string> = TPath extends `${infer Head}.${infer Rest}`
  ? Head extends keyof TRecord
    ? ProcedureAt<TRecord[Head], Rest>
    : never
  : TPath extends keyof TRecord
    ? TRecord[TPath]
    : never;

/** The input a router's mutation at `TPath` takes (before its parser runs). */
export type MutationInput<
  TRouter extends AnyTRPCRouter,
  TPath extends MutationPath<TRouter>,
> = inferProcedureInput<Extract<ProcedureAt<TRouter['_def']['record'], TPath>, AnyTRPCProcedure>>;
