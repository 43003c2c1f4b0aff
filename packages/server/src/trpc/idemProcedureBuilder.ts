import { getTRPCErrorFromUnknown, initTRPC } from '@trpc/server';
import { idemMisuse } from '../errors/idemErrors.js';
import type { TRPCDefaultErrorShape, TRPCProcedureBuilder, TRPCUnsetMarker } from '@trpc/server';
import type { IdemMeta, IdempotencyOptions } from '@idem/contract';
import { formatIdemError, type IdemErrorShape } from '../errors/formatIdemError.js';
import type { IdemContext } from '../types/IdemRequest.js';
import type { IdemExecution } from '../types/IdemExecution.js';
import type { NextResult } from '../types/IdemJob.js';
import { markIdemMiddleware } from './idemMiddlewareMark.js';
import {
  lastMiddleware,
  shapeError,
  trpcMiddlewareMarker,
  type TRPCGetRawInputFn,
  type TRPCMiddlewareResult,
} from './trpcInternals.js';
import type { IdemMiddlewareCall } from '../types/IdemJob.js';

/**
 * The builder type `idem.procedure()` returns: adds `ctx.idem`, idem's meta, and the error shape
 * that marks the procedure idempotent in the router type.
 *
 * Its parsed-input slot is `unknown`, not tRPC's "unset": the key's fingerprint is taken from the
 * input idem's middleware sees, which is the parsed input only if every `.input()` comes before
 * `.concat(idem.procedure())`. `unknown` leaves the input of a builder that already has one
 * unchanged (`{ cartId: string } & unknown` is `{ cartId: string }`), and makes any later
 * `.input()` a compile error ("All input parsers did not resolve to an object"): written the other
 * way round, a reused key with a different input would replay the first result.
 */
export type IdemProcedureBuilder<
  TContext,
  TIdem,
  TOutputOut = TRPCUnsetMarker,
> = TRPCProcedureBuilder<
  // `idemRetryDecision` is the compiler-only mark of `retrySafe()` / `retryUnsafe()`: a builder
  // that carries either cannot take idem's procedure too (a "Context mismatch" at `.concat()`).
  TContext & { idemRetryDecision?: never },
  IdemMeta,
  { idem: TIdem },
  TRPCUnsetMarker,
  unknown,
  TRPCUnsetMarker,
  TOutputOut,
  false,
  IdemErrorShape | TRPCDefaultErrorShape
>;

/** idem's own tRPC instance (per app): its meta and error formatter, never stack traces. */
export function buildPlugin<TContext extends IdemContext>() {
  return initTRPC.context<TContext>().meta<IdemMeta>().create({ isDev: false }); // never send stack traces of idem's own errors
}

/**
 * One idempotent procedure builder around `handle` (per procedure): one tRPC middleware, which
 * also shapes the errors idem raised (`formatIdemError`), as an `.errors(formatIdemError)` layer
 * in front of it would. Folded in, the shaping costs something only when a result failed; as a
 * layer of its own it cost every request about as much as the `.use()` itself (measured
 * in-process, docs/benchmarks.md).
 */
export function buildProcedure<TContext extends IdemContext, TIdem extends IdemExecution>(
  t: ReturnType<typeof buildPlugin<TContext>>,
  meta: IdempotencyOptions,
  handle: (opts: IdemMiddlewareCall<TContext, TIdem>) => Promise<NextResult>,
): IdemProcedureBuilder<TContext, TIdem> {
  const builder = t.procedure.meta({ idempotency: meta }).use(async (opts) => {
    let result: NextResult;
    try {
      result = await handle({
        ctx: opts.ctx as TContext,
        path: opts.path,
        type: opts.type,
        input: opts.input,
        next: (idem) =>
          // tRPC's runtime takes both; its types spell them as two overloads.
          (
            opts.next as (o: { ctx: object; getRawInput: TRPCGetRawInputFn }) => Promise<NextResult>
          )({
            ctx: { idem },
            getRawInput: () => Promise.reject(idemMisuse.inputAfterIdem(opts.path)),
          }),
      });
    } catch (cause) {
      // What tRPC does with a throwing middleware, here so that the error gets idem's shape.
      result = { ok: false, error: getTRPCErrorFromUnknown(cause), marker: trpcMiddlewareMarker };
    }
    // Errors from the steps after idem's (the handler's, a misplaced `.input()`) too, as
    // `.errors()` in front of it would: formatIdemError shapes only those idem raised.
    if (!result.ok) shapeError(result.error, opts.path, formatIdemError);
    return result as TRPCMiddlewareResult<{ idem: TIdem }>;
  });
  markIdemMiddleware(lastMiddleware(builder));
  return builder as unknown as IdemProcedureBuilder<TContext, TIdem>;
  // The cast names the builder: tRPC spells the same context through its own unwrapping, the
  // input slot is `unknown` on purpose (see IdemProcedureBuilder), and the error shape is the one
  // the middleware gives idem's errors (what `.errors(formatIdemError)` would have declared).
}
