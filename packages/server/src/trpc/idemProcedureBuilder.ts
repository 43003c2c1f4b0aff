import { initTRPC } from '@trpc/server';
import { idemMisuse } from '../errors/idemErrors.js';
import type { TRPCDefaultErrorShape, TRPCProcedureBuilder, TRPCUnsetMarker } from '@trpc/server';
import type { IdemMeta, IdempotencyOptions } from '@idem/contract';
import { formatIdemError, type IdemErrorShape } from '../errors/formatIdemError.js';
import type { IdemContext } from '../request/idemContext.js';
import type { IdemExecution } from '../request/IdemExecution.js';
import type { NextResult } from '../request/IdemJob.js';
import { markIdemMiddleware } from './idemMiddlewareMark.js';
import type { TRPCGetRawInputFn, TRPCMiddlewareResult } from './trpcInternals.js';

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
  TContext,
  IdemMeta,
  { idem: TIdem },
  TRPCUnsetMarker,
  unknown,
  TRPCUnsetMarker,
  TOutputOut,
  false,
  IdemErrorShape | TRPCDefaultErrorShape
>;

/** What idem's middleware hands to the per-request code (per request). */
export interface IdemMiddlewareCall<TContext, TIdem> {
  ctx: TContext;
  path: string;
  type: string;
  input: unknown;
  next: (idem: TIdem) => Promise<NextResult>;
}

/** idem's own tRPC instance (per app): its meta and error formatter, never stack traces. */
export function buildPlugin<TContext extends IdemContext>() {
  return initTRPC.context<TContext>().meta<IdemMeta>().create({ isDev: false }); // never send stack traces of idem's own errors
}

/** One idempotent procedure builder around `handle` (per procedure). */
export function buildProcedure<TContext extends IdemContext, TIdem extends IdemExecution>(
  t: ReturnType<typeof buildPlugin<TContext>>,
  meta: IdempotencyOptions,
  handle: (opts: IdemMiddlewareCall<TContext, TIdem>) => Promise<NextResult>,
): IdemProcedureBuilder<TContext, TIdem> {
  const builder = t.procedure
    .meta({ idempotency: meta })
    .errors(formatIdemError)
    .use(async (opts) => {
      const result = await handle({
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
      return result as TRPCMiddlewareResult<{ idem: TIdem }>;
    });
  markIdemMiddleware(builder._def.middlewares.at(-1)!);
  return builder as unknown as IdemProcedureBuilder<TContext, TIdem>;
  // The cast names the builder: tRPC spells the same context through its own unwrapping, and the
  // input slot is `unknown` on purpose (see IdemProcedureBuilder).
}
