import { sql, type SQL } from 'drizzle-orm';

/** What {@link seedRecords} inserts. */
export interface SeedPlan {
  /** Completed records still inside their replay window (kept by the reaper). */
  live: number;
  /** Completed records whose `purge_after` is in the past by the database clock (reapable). */
  expired: number;
  /** First key number, so that several seeds never collide. */
  offset: number;
}

/**
 * Bulk-inserts completed records straight into `idem_records` with `generate_series`, never
 * through the API. Expired rows come first (they are the older ones, as in a real table) and
 * carry `purge_after` a day in the past of `statement_timestamp()`, the clock the reaper reads;
 * live rows complete an hour ago and are kept for three more days. Scopes spread over 1,000
 * accounts; key hashes and fingerprints are 64 hex characters, like SHA-256's; operation ids are
 * version-7 UUIDs of the record's creation time, as idem's server makes them (its newOperationId).
 */
export function seedRecords(plan: SeedPlan): SQL {
  const total = plan.live + plan.expired;
  return sql`
    INSERT INTO idem_records (
      scope, procedure, key_hash, fingerprint, fingerprint_version, state, version, attempts,
      operation_id, response_status, response_body, created_at, updated_at, completed_at,
      replay_expires_at, purge_after
    )
    SELECT 'seed-' || (n % 1000), 'idem.create', md5('k' || n) || md5('h' || n),
      md5('f' || n) || md5('g' || n), 1, 'COMPLETED', 1, 1,
      (lpad(to_hex((extract(epoch FROM t.created) * 1000)::bigint), 12, '0') || '7'
        || substr(md5('o' || n), 1, 3) || '8' || substr(md5('o' || n), 4, 15))::uuid,
      200,
      '{"id":' || n || ',"scope":"seed","sku":"bench","quantity":1}',
      t.created, t.created, t.created, t.created + interval '1 day', t.purge
    FROM generate_series(${plan.offset + 1}::bigint, ${plan.offset + total}::bigint) AS g(n)
    CROSS JOIN LATERAL (
      SELECT
        CASE WHEN n <= ${plan.offset + plan.expired} THEN statement_timestamp() - interval '4 days'
          ELSE statement_timestamp() - interval '1 hour' END AS created,
        CASE WHEN n <= ${plan.offset + plan.expired}
          THEN statement_timestamp() - interval '1 day' + (n - ${plan.offset}) * interval '1 microsecond'
          ELSE statement_timestamp() + interval '3 days' END AS purge
    ) AS t`;
}
