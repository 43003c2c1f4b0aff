import type { AnyTRPCRouter } from '@trpc/server';
import { DEFAULT_REPLAY_WINDOW_MS, DEFAULT_RETENTION_MS } from '@idem/contract';
import type { ProcedureWindows, ProcedureWindowsByPath } from '../types/ProcedureWindows.js';
import { routerProcedures } from '../trpc/trpcInternals.js';

/**
 * The windows of this app's idempotent procedures, by path, for writes made outside a request
 * (a cancel): a cancelled operation keeps its procedure's replay window and retention.
 *
 * A path is learned when a request for it arrives in this process, and for every procedure of
 * the router given to the completer at start-up. An unknown path takes the windows every
 * procedure of this app shares, else the app's `defaults` (the contract's defaults when unset).
 */
export class ProcedureWindowRegistry implements ProcedureWindowsByPath {
  readonly #byPath = new Map<string, ProcedureWindows>();
  readonly #built = new Map<string, ProcedureWindows>();

  constructor(readonly fallback: ProcedureWindows) {}

  /** A procedure builder was made with these windows (its path is not known yet). */
  built(windows: ProcedureWindows): void {
    const own = pick(windows);
    this.#built.set(`${own.replayWindowMs}/${own.retentionMs}`, own);
  }

  /** A request for `path` ran with these windows. */
  seen(path: string, windows: ProcedureWindows): void {
    if (!this.#byPath.has(path)) this.#byPath.set(path, pick(windows));
  }

  /** Learns every idempotent procedure of `router` from its meta (lazy routers not yet loaded are skipped). */
  learn(router: AnyTRPCRouter): void {
    for (const [path, def] of routerProcedures(router)) {
      const meta = def.meta?.idempotency;
      if (!meta) continue;
      this.seen(path, {
        replayWindowMs: meta.replayWindowMs ?? DEFAULT_REPLAY_WINDOW_MS,
        retentionMs: meta.retentionMs ?? DEFAULT_RETENTION_MS,
      });
    }
  }

  /** The windows of `path`. */
  of(path: string): ProcedureWindows {
    const known = this.#byPath.get(path);
    if (known) return known;
    if (this.#built.size === 1) return [...this.#built.values()][0]!;
    return this.fallback;
  }
}

function pick(windows: ProcedureWindows): ProcedureWindows {
  return { replayWindowMs: windows.replayWindowMs, retentionMs: windows.retentionMs };
}
