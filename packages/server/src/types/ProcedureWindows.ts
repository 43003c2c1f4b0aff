import type { AnyTRPCRouter } from '@trpc/server';

/** How long a procedure's settled records replay, and when they are deleted. */
export interface ProcedureWindows {
  replayWindowMs: number;
  retentionMs: number;
}

/**
 * The windows of an app's idempotent procedures, by path, for writes made outside a request (a
 * cancel): `ProcedureWindowRegistry` in request/procedureWindows.ts.
 */
export interface ProcedureWindowsByPath {
  /** A procedure builder was made with these windows (its path is not known yet). */
  built(windows: ProcedureWindows): void;
  /** A request for `path` ran with these windows. */
  seen(path: string, windows: ProcedureWindows): void;
  /** Learns every idempotent procedure of `router` from its meta. */
  learn(router: AnyTRPCRouter): void;
  /** The windows of `path`. */
  of(path: string): ProcedureWindows;
}
