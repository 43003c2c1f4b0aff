import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LookupResult } from '@idem/server';
import { and, asc, count, eq, sql } from 'drizzle-orm';
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
 * How the stand-in processor treats a repeated charge request for one operation id:
 * `deduplicating` returns the first charge (the processor honours the idempotency key);
 * `lookup-only` charges again (it can only be asked, by operation id, whether a charge exists),
 * so a second call to it is a second charge.
 */
export type ProcessorMode = 'deduplicating' | 'lookup-only';

/** What a charge or lookup request carries besides its data. */
export interface ProcessorRequestOptions {
  /** Aborts the request: before it reached the processor, nothing happened there. */
  signal?: AbortSignal;
}

/**
 * A stand-in card processor: a remote system the example cannot roll back. It lives in its own
 * tables (in the example's database, for convenience only: idem treats it as external, and
 * several server processes on one database share it), answers after a simulated latency, and can
 * be asked by operation id whether a charge exists. Every call it receives is counted.
 *
 * Half of the latency is the way there and half the way back: a request aborted (or a process
 * killed) on the way there never reached the processor and left no trace; one on the way back was
 * received and executed, and only its answer was lost. The call is recorded and executed in one
 * transaction when it arrives, so the ledger counts exactly the calls the processor acted on.
 */
export class StandInProcessor {
  constructor(
    private readonly db: AppDb,
    /** The simulated latency in milliseconds; the checkout page's "slow processor" switch sets it. */
    public latencyMs: number,
    private readonly log: JsonLogger,
    /** Defaults to `deduplicating`. */
    private readonly mode: ProcessorMode = 'deduplicating',
  ) {}

  /**
   * Charges: once per operation id when `deduplicating` (a repeated request returns the first
   * charge), once per call when `lookup-only`.
   */
  async charge(request: ChargeRequest, options: ProcessorRequestOptions = {}): Promise<Charge> {
    const { accountId, operationId } = request;
    await this.#travel(options.signal);
    const deduplicated = this.mode === 'deduplicating';
    const { charge, inserted } = await this.db.transaction(async (tx) => {
      await tx.insert(processorCalls).values({ accountId, operationId, kind: 'charge' });
      const id = `ch_${randomBytes(8).toString('hex')}`;
      const rows = await tx
        .insert(processorCharges)
        .values({ id, ...request, deduplicated })
        .onConflictDoNothing({
          target: processorCharges.operationId,
          where: sql`${processorCharges.deduplicated}`,
        })
        .returning({ id: processorCharges.id });
      if (rows[0]) return { charge: { chargeId: rows[0].id }, inserted: true };
      const [first] = await tx
        .select({ id: processorCharges.id })
        .from(processorCharges)
        .where(
          and(
            eq(processorCharges.operationId, operationId),
            eq(processorCharges.deduplicated, true),
          ),
        );
      if (!first) throw new Error('processor: the charge vanished');
      return { charge: { chargeId: first.id }, inserted: false };
    });
    this.log({
      msg: 'processor.charge',
      accountId,
      operationId,
      chargeId: charge.chargeId,
      deduplicated: !inserted,
      mode: this.mode,
    });
    await this.#travel(options.signal);
    return charge;
  }

  /** Whether a charge exists for `operationId` (the answer after an unknown outcome). */
  async lookup(
    accountId: string,
    operationId: string,
    options: ProcessorRequestOptions = {},
  ): Promise<LookupResult<Charge>> {
    await this.#travel(options.signal);
    await this.db.insert(processorCalls).values({ accountId, operationId, kind: 'lookup' });
    const charge = await this.#find(operationId);
    await this.#travel(options.signal);
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

  /** The first charge of `operationId`, if any. */
  async #find(operationId: string): Promise<Charge | null> {
    const [row] = await this.db
      .select({ id: processorCharges.id })
      .from(processorCharges)
      .where(eq(processorCharges.operationId, operationId))
      .orderBy(asc(processorCharges.createdAt), asc(processorCharges.id))
      .limit(1);
    return row ? { chargeId: row.id } : null;
  }

  /** Half the latency: the way to the processor, or back. */
  async #travel(signal: AbortSignal | undefined): Promise<void> {
    if (this.latencyMs > 0) await sleep(this.latencyMs / 2, undefined, { signal });
    else signal?.throwIfAborted();
  }
}
