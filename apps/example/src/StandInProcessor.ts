import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LookupResult } from '@idem/server';
import { count, eq } from 'drizzle-orm';
import type { AppDb } from './openDatabase.js';
import type { JsonLogger } from './jsonLogger.js';
import { processorCalls, processorCharges } from './schema.js';

/** What the processor is asked to charge. */
export interface ChargeRequest {
  /** The merchant account the charge is for. */
  accountId: string;
  /** The caller's idempotency key at the processor: idem's operation id. */
  operationId: string;
  amountCents: number;
  currency: string;
}

/** What the processor answers. */
export interface Charge {
  chargeId: string;
}

/** External side effects of one account, as the processor counts them. */
export interface ProcessorStats {
  /** Charges that exist: money moved. */
  charges: number;
  /** Charge requests received, including ones the processor de-duplicated. */
  chargeCalls: number;
  /** Lookups by operation id received. */
  lookupCalls: number;
}

/**
 * A stand-in card processor: a remote system the example cannot roll back. It lives in its own
 * tables (in the example's database, for convenience only: idem treats it as external), answers
 * after a simulated latency, de-duplicates on the operation id it receives, and can be asked by
 * operation id whether a charge exists. Every call it receives is counted.
 */
export class StandInProcessor {
  constructor(
    private readonly db: AppDb,
    private readonly latencyMs: number,
    private readonly log: JsonLogger,
  ) {}

  /** Charges once per operation id: a repeated request returns the first charge. */
  async charge(request: ChargeRequest): Promise<Charge> {
    const { accountId, operationId } = request;
    await this.db.insert(processorCalls).values({ accountId, operationId, kind: 'charge' });
    await sleep(this.latencyMs);
    const inserted = await this.db
      .insert(processorCharges)
      .values({ id: `ch_${randomBytes(8).toString('hex')}`, ...request })
      .onConflictDoNothing({ target: processorCharges.operationId })
      .returning({ id: processorCharges.id });
    const charge = await this.#find(operationId);
    if (!charge) throw new Error('processor: the charge vanished');
    this.log({
      msg: 'processor.charge',
      accountId,
      operationId,
      chargeId: charge.chargeId,
      deduplicated: inserted.length === 0,
    });
    return charge;
  }

  /** Whether a charge exists for `operationId` (the answer after an unknown outcome). */
  async lookup(accountId: string, operationId: string): Promise<LookupResult<Charge>> {
    await this.db.insert(processorCalls).values({ accountId, operationId, kind: 'lookup' });
    await sleep(this.latencyMs);
    const charge = await this.#find(operationId);
    this.log({ msg: 'processor.lookup', accountId, operationId, found: charge !== null });
    return charge ? { found: true, result: charge } : { found: false };
  }

  /** The counts for one account. */
  async stats(accountId: string): Promise<ProcessorStats> {
    const [charges] = await this.db
      .select({ n: count() })
      .from(processorCharges)
      .where(eq(processorCharges.accountId, accountId));
    const calls = await this.db
      .select({ kind: processorCalls.kind, n: count() })
      .from(processorCalls)
      .where(eq(processorCalls.accountId, accountId))
      .groupBy(processorCalls.kind);
    const callsOf = (kind: 'charge' | 'lookup') => calls.find((row) => row.kind === kind)?.n ?? 0;
    return {
      charges: charges?.n ?? 0,
      chargeCalls: callsOf('charge'),
      lookupCalls: callsOf('lookup'),
    };
  }

  async #find(operationId: string): Promise<Charge | null> {
    const [row] = await this.db
      .select({ id: processorCharges.id })
      .from(processorCharges)
      .where(eq(processorCharges.operationId, operationId));
    return row ? { chargeId: row.id } : null;
  }
}
