import type {
  AuditEntry,
  Fence,
  RecoveryRecord,
  Resolution,
  StoredResponse,
  StuckReport,
} from '@idem/contract';
import { assertLimit, assertMilliseconds, assertWindows } from '../drizzle/assertMilliseconds.js';
import { executeRows } from '../drizzle/executeRows.js';
import { toRecoveryRecord, type RecordRow } from '../drizzle/recordProjection.js';
import * as audit from '../statements/operators/auditRows.js';
import * as erasure from '../statements/operators/erasureStatements.js';
import * as operator from '../statements/operators/operatorStatements.js';
import * as lookup from '../statements/request/operationLookup.js';
import * as reaper from '../statements/workers/reaperStatements.js';
import type { StoreParts } from './StoreParts.js';

/**
 * What `DrizzleIdempotencyStore` does for operators, the admin tools and a caller's status and
 * cancel (see its methods): finding records, the stuck report, cancel and resolve with their
 * audit trail, and erasure. One statement each (`resolve` writes its audit row in the same one).
 */
export class OperatorCalls<TTx> {
  readonly #parts: StoreParts<TTx>;

  constructor(parts: StoreParts<TTx>) {
    this.#parts = parts;
  }

  async findByOperationId(operationId: string, tx?: TTx): Promise<RecoveryRecord | null> {
    if (!lookup.isOperationId(operationId)) return null;
    const statement = lookup.selectByOperationId(operationId, this.#parts.clock);
    const [row] = await executeRows<RecordRow>(this.#parts.statements(tx), statement);
    return row === undefined ? null : toRecoveryRecord(row);
  }

  async stuckReport(options: { graceMs: number }): Promise<StuckReport> {
    assertMilliseconds('graceMs', options.graceMs, 0);
    const statement = reaper.stuckReport(options.graceMs, this.#parts.clock);
    const [row] = await executeRows<reaper.StuckReportRow>(this.#parts.statements(), statement);
    return {
      abandoned: row!.abandoned,
      pendingTooLong: row!.pending_too_long,
      outcomeUnknown: row!.outcome_unknown,
      needsReconciliation: row!.needs_reconciliation,
    };
  }

  async listStuck(options: { graceMs: number; limit: number }): Promise<RecoveryRecord[]> {
    assertMilliseconds('graceMs', options.graceMs, 0);
    assertLimit('limit', options.limit);
    const statement = reaper.listStuck(options.graceMs, options.limit, this.#parts.clock);
    return (await executeRows<RecordRow>(this.#parts.statements(), statement)).map(
      toRecoveryRecord,
    );
  }

  async cancel(
    fence: Fence,
    response: StoredResponse,
  ): Promise<'cancelled' | 'irreversible' | 'stale'> {
    assertWindows(response);
    const statement = operator.cancel(fence, response, this.#parts.clock);
    const [row] = await executeRows<{ outcome: 'cancelled' | 'irreversible' | 'stale' }>(
      this.#parts.statements(),
      statement,
    );
    return row!.outcome;
  }

  async resolve(fence: Fence, resolution: Resolution): Promise<boolean> {
    operator.assertResolution(resolution);
    return (await this.#parts.count(operator.resolve(fence, resolution, this.#parts.clock))) > 0;
  }

  async listAudit(recordId: string): Promise<AuditEntry[]> {
    const rows = await executeRows<audit.AuditRow>(
      this.#parts.statements(),
      audit.selectAudit(recordId),
    );
    return rows.map(audit.toAuditEntry);
  }

  async eraseScope(scope: string): Promise<number> {
    return this.#parts.count(erasure.eraseScope(scope, this.#parts.clock));
  }
}
