import { randomFillSync } from 'node:crypto';

/**
 * Random bytes for many ids at once: one `randomFillSync` per {@link IDS_PER_FILL} ids, as Node's
 * own `randomUUID` batches its entropy. 16 bytes per id; the first 6 are overwritten with the time.
 */
const IDS_PER_FILL = 128;
const pool = Buffer.alloc(16 * IDS_PER_FILL);
let used = IDS_PER_FILL;

/**
 * A new operation id: a UUID of version 7 (RFC 9562), the Unix time in milliseconds in its first
 * 48 bits, then 74 random bits (from `node:crypto`).
 *
 * Why time-ordered: the store keeps operation ids in a unique index, and every fresh request
 * inserts one. A random id (version 4) lands on any leaf of that index, so on a large table nearly
 * every insert dirties a leaf no other recent insert touched, and the first change of a page after
 * a checkpoint writes the whole page to the WAL. Ids that grow with time land at the index's right
 * edge, a few leaves for all of them. Measured on PostgreSQL (docs/benchmarks.md, "The rules the hot path follows"):
 * the record's WAL 10.2 → 6.3 KB per request on a 500,000-row table after a checkpoint.
 *
 * What it gives away: the id says when (to the millisecond) its operation started, which its record
 * says anyway. 74 random bits still make it unguessable; ids made in the same millisecond are
 * unordered among themselves, which nothing relies on.
 */
export function newOperationId(nowMs: number = Date.now()): string {
  if (used === IDS_PER_FILL) {
    randomFillSync(pool);
    used = 0;
  }
  const at = used++ * 16;
  pool.writeUIntBE(nowMs, at, 6);
  pool[at + 6] = (pool[at + 6]! & 0x0f) | 0x70; // version 7
  pool[at + 8] = (pool[at + 8]! & 0x3f) | 0x80; // variant 10 (RFC 9562)
  const hex = pool.toString('hex', at, at + 16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
