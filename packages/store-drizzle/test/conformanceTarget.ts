import type { RecordState, RecoveryStore } from '@idem/contract';
import type { StoreContractTarget } from '@idem/fixtures';
import { sql, type SQL } from 'drizzle-orm';
import type { DrizzleIdempotencyStoreOptions } from '../src/index.js';

export {
  claimedRecord,
  claimInput,
  existingRecord,
  freshKeyHash,
  outcomeRecord,
  releaseWindows,
  Rollback,
  stored,
  storedResponse,
  UNSORTED_UNICODE_BODY,
} from '@idem/fixtures';

/** What a conformance suite needs from a driver: stores and raw reads on one migrated database. */
export interface ConformanceTarget<TTx> {
  /**
   * A store on the suite's database (a new Drizzle instance on the same client), optionally with
   * a shifted clock, and a `logQuery` hook that sees every statement the store runs.
   */
  createStore(
    options?: DrizzleIdempotencyStoreOptions & { logQuery?: (query: string) => void },
  ): RecoveryStore<TTx>;
  /** Runs `query` on the database, or on `tx`, and returns its rows. */
  rows<T>(query: SQL, tx?: TTx): Promise<T[]>;
}

interface KeyRow {
  id: string;
  superseded: boolean;
  attempts: number;
  state: string;
}

/** Shorthands over a target, read when a test runs (after the caller's `beforeAll`). */
export function conformanceHelpers<TTx>(target: () => ConformanceTarget<TTx>) {
  return {
    /** A store on the suite's database, on the database's own clock. */
    store: () => target().createStore(),
    /** A store whose clock runs `shiftMs` ahead: a worker arriving that much later. */
    laterStore: (shiftMs: number) => target().createStore({ dangerouslyShiftClockMs: shiftMs }),
    /** Every row of a key, superseded ones included, oldest first. */
    rowsOfKey: (keyHash: string) =>
      target().rows<KeyRow>(sql`
        SELECT id::text AS id, superseded_at IS NOT NULL AS superseded, attempts, state
        FROM idem_records WHERE key_hash = ${keyHash} ORDER BY id`),
    /**
     * Puts a record in a state no store method reaches from where the test is (PENDING, a
     * superseded IN_PROGRESS row, a very old cleanup time), by a raw UPDATE.
     */
    force: (id: string, set: { state?: RecordState; superseded?: boolean; purgeAfter?: string }) =>
      target().rows(sql`
        UPDATE idem_records SET
          state = coalesce(${set.state ?? null}::text, state),
          superseded_at = CASE WHEN ${set.superseded ?? false}::boolean THEN now()
            ELSE superseded_at END,
          purge_after = coalesce(${set.purgeAfter ?? null}::timestamptz, purge_after)
        WHERE id = ${id}::bigint`),
    /** How many rows of `ids` are still in the table. */
    surviving: async (ids: readonly string[]) => {
      const [row] = await target().rows<{ n: number }>(sql`
        SELECT count(*)::int AS n FROM idem_records WHERE id::text = ANY(${sql.param([...ids])}::text[])`);
      return row!.n;
    },
  };
}

/** The store contract's view of a target: its stores, on the database's clock or a shifted one. */
export function contractTarget<TTx>(target: ConformanceTarget<TTx>): StoreContractTarget<TTx> {
  return {
    store: () => target.createStore(),
    laterStore: (shiftMs) => target.createStore({ dangerouslyShiftClockMs: shiftMs }),
  };
}
