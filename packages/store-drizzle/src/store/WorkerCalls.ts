import {
  RECONCILIATION_REASONS,
  type Fence,
  type ReconciliationReason,
  type RecoveryRecord,
} from '@idem/contract';
import {
  assertLimit,
  assertMaxTakeovers,
  assertMilliseconds,
} from '../drizzle/assertMilliseconds.js';
import { executeRows } from '../drizzle/executeRows.js';
import { toRecoveryRecord, type RecordRow } from '../drizzle/recordProjection.js';
import * as recovery from '../statements/request/recoveryStatements.js';
import * as queue from '../statements/workers/queueStatements.js';
import * as reaper from '../statements/workers/reaperStatements.js';
import type { StoreParts } from './StoreParts.js';

/**
 * What `DrizzleIdempotencyStore` does for the background workers and the owner of long work
 * (see its methods): the completer's takeover, the worker pool's queue, the heartbeat, the move
 * to an unsettled state, and the reaper's deletes. One statement each, outside any transaction.
 */
export class WorkerCalls<TTx> {
  readonly #parts: StoreParts<TTx>;

  constructor(parts: StoreParts<TTx>) {
    this.#parts = parts;
  }

  async takeOverAbandoned(options: recovery.TakeOverOptions): Promise<RecoveryRecord[]> {
    assertMilliseconds('leaseMs', options.leaseMs, 1);
    assertLimit('limit', options.limit);
    if (options.maxTakeovers !== undefined) assertMaxTakeovers(options.maxTakeovers);
    if (options.procedures.length === 0) return [];
    const statement = recovery.takeOverAbandoned(options, this.#parts.clock);
    return (await executeRows<RecordRow>(this.#parts.statements(), statement)).map(
      toRecoveryRecord,
    );
  }

  async takePending(options: queue.TakePendingOptions): Promise<RecoveryRecord[]> {
    assertMilliseconds('leaseMs', options.leaseMs, 1);
    assertLimit('limit', options.limit);
    if (options.procedures.length === 0) return [];
    const statement = queue.takePending(options, this.#parts.clock);
    return (await executeRows<RecordRow>(this.#parts.statements(), statement)).map(
      toRecoveryRecord,
    );
  }

  async countPending(procedures: readonly string[]): Promise<number> {
    if (procedures.length === 0) return 0;
    const [row] = await executeRows<{ pending: number }>(
      this.#parts.statements(),
      queue.countPending(procedures),
    );
    return Number(row?.pending ?? 0);
  }

  async extendLease(fence: Fence, leaseMs: number): Promise<boolean> {
    assertMilliseconds('leaseMs', leaseMs, 1);
    return this.#parts.written(recovery.extendLease(fence, leaseMs, this.#parts.clock));
  }

  async markUnsettled(
    fence: Fence,
    state: 'OUTCOME_UNKNOWN' | 'NEEDS_RECONCILIATION',
    reason?: ReconciliationReason,
  ): Promise<boolean> {
    if (!recovery.UNSETTLED.includes(state)) {
      throw new TypeError(
        `markUnsettled moves to ${recovery.UNSETTLED.join(' or ')}, got ${state}`,
      );
    }
    if (reason !== undefined && !Object.hasOwn(RECONCILIATION_REASONS, reason)) {
      throw new TypeError(`markUnsettled: unknown reconciliation reason ${reason}`);
    }
    return this.#parts.written(
      recovery.markUnsettled(fence, state, reason ?? null, this.#parts.clock),
    );
  }

  async reap(options: { limit: number }): Promise<number> {
    assertLimit('limit', options.limit);
    return this.#parts.count(reaper.reap(options.limit, this.#parts.clock));
  }
}
