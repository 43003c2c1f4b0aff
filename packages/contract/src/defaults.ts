/** Numbers of the wire contract, in milliseconds. */

/** A completed key replays its result for 24 hours after completion. */
export const DEFAULT_REPLAY_WINDOW_MS = 24 * 60 * 60 * 1000;

/** A record is deleted 72 hours after completion: longer than replay, for operators. */
export const DEFAULT_RETENTION_MS = 72 * 60 * 60 * 1000;

/** A worker owns an in-progress key for 30 seconds unless it extends its lease. */
export const DEFAULT_LEASE_MS = 30 * 1000;

/**
 * A record whose work was taken over this many times (its worker vanished, or a lookup was owed)
 * goes to NEEDS_RECONCILIATION at the next takeover instead of running again: a procedure that
 * keeps killing its worker is handed to an operator rather than retried forever.
 */
export const DEFAULT_MAX_TAKEOVERS = 5;

/**
 * How long a duplicate of a local-only request waits behind the first one's uncommitted claim
 * before it is answered 409 in progress.
 */
export const DEFAULT_LOCK_TIMEOUT_MS = 2 * 1000;

/**
 * The fingerprint algorithm version stored with each record. 2: SHA-256 of a canonical text that
 * tells Map, Set, Date, BigInt and undefined apart (1: canonical JSON, which did not). A record is
 * always compared by the version it carries, so records made by 1 keep working until they expire.
 */
export const FINGERPRINT_VERSION = 2;
