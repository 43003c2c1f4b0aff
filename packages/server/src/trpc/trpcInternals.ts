/**
 * The one door to tRPC's internals (`@trpc/server/unstable-core-do-not-import`): nothing else in
 * `@idem/server` imports that subpath. Its names may change in any tRPC release, so the peer range
 * of `@trpc/server` ends at the highest minor the version matrix ran on (`>=11.22.1 <11.26.0`).
 * Checked on tRPC 11.22.1 (the first release exporting `getDefaultErrorShape`,
 * `isFormattedErrorShape` and `setFormattedErrorShape`; `middlewareMarker`, `GetRawInputFn` and
 * `MiddlewareResult` exist from 11.0.0) and 11.25.2, by `scripts/version-matrix.sh`.
 * `test/trpcInternals.test.ts` (the canary) replays through `createCaller` to prove these still
 * mean what idem relies on. Public alternatives are used wherever tRPC has one:
 * `TRPCProcedureBuilder` and `TRPCUnsetMarker` from `@trpc/server`, `TRPC_ERROR_CODES_BY_KEY` from
 * `@trpc/server/rpc`.
 */
import type { AnyTRPCRouter, TRPCError } from '@trpc/server';
import type { IdemMeta } from '@idem/contract';
import type { GetRawInputFn, MiddlewareResult } from '@trpc/server/unstable-core-do-not-import';
import {
  getDefaultErrorShape,
  isFormattedErrorShape,
  middlewareMarker,
  setFormattedErrorShape,
} from '@trpc/server/unstable-core-do-not-import';

/**
 * The brand tRPC checks on what a middleware returns. idem answers a replay without calling
 * `next()`, so it builds that result itself, marked like tRPC's own.
 */
export const trpcMiddlewareMarker = middlewareMarker;

/** What `next()` takes to replace the raw input of the steps after a middleware. */
export type TRPCGetRawInputFn = GetRawInputFn;

/** What a middleware returns, typed by the context it adds. */
export type TRPCMiddlewareResult<TContextOverride> = MiddlewareResult<TContextOverride>;

/**
 * What tRPC's `.errors(formatter)` layer does to a failed result, done inside idem's own
 * middleware instead of in a layer of its own (one tRPC layer is two copies of the call's options
 * and a promise per request). `format` gets tRPC's default shape of the error and returns the
 * shape the client gets, or undefined to leave the error to the root `errorFormatter`. An error
 * a procedure-level formatter already shaped keeps its shape, as with `.errors()`.
 */
export function shapeError(
  error: TRPCError,
  path: string,
  format: (opts: { error: TRPCError; shape: ReturnType<typeof getDefaultErrorShape> }) => unknown,
): void {
  if (isFormattedErrorShape(error)) return;
  const shape = format({ error, shape: getDefaultErrorShape({ error, path, isDev: false }) });
  if (shape !== undefined)
    setFormattedErrorShape(error, shape as Parameters<typeof setFormattedErrorShape>[1]);
}

/** A procedure's definition as idem reads it (tRPC's `_def`, read-only). */
export interface TRPCProcedureDef {
  type?: string;
  meta?: IdemMeta;
  middlewares?: unknown[];
}

/** The procedures of a router's loaded part (`lazy()` routers not yet loaded are absent), by path. */
export function routerProcedures(router: AnyTRPCRouter): [string, TRPCProcedureDef][] {
  const procedures = router._def.procedures as Record<string, { _def?: TRPCProcedureDef }>;
  return Object.entries(procedures).map(([path, procedure]) => [path, procedure._def ?? {}]);
}

/** The `lazy()` routers of a router not loaded yet, live: loading one removes it. */
export function pendingLazyRouters(
  router: AnyTRPCRouter,
): Record<string, { load: () => Promise<void> }> {
  return router._def.lazy as Record<string, { load: () => Promise<void> }>;
}

/** The definition of a value that is a tRPC procedure, or undefined. */
export function procedureDefOf(procedure: unknown): TRPCProcedureDef | undefined {
  return (procedure as { _def?: TRPCProcedureDef } | null | undefined)?._def;
}

/** The last middleware a procedure builder was given (the one `.use()` just added). */
export function lastMiddleware(builder: { _def: { middlewares: unknown[] } }): object {
  return builder._def.middlewares.at(-1) as object;
}
