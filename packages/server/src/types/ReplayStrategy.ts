import type { TextCipher } from './TextCipher.js';

/**
 * What a procedure stores for replay, when storing its whole output is wrong.
 *
 * - `full` (default): the whole output; the replay is byte-identical.
 * - `reference`: a small reference (resource id, version, a few stable fields) instead of the
 *   output; the replay rebuilds the response by re-reading the current resource as the CURRENT
 *   caller (authorization runs again). If the resource is gone, the replay answers 404
 *   `IDEMPOTENCY_RESOURCE_GONE` instead of recreating it. Replays show the current representation.
 * - `encrypted`: for a secret shown once (an API token): the output is stored encrypted with
 *   `cipher` and replayed until the replay window ends; the reaper deletes it after retention.
 * - `redacted`: for a secret: the replay returns `redact(output)` (e.g. `{ id, created: true }`,
 *   never the token); the first response was the only one with the secret.
 * - `none`: for a secret that must never be stored: a retry is refused with 409
 *   `IDEMPOTENCY_REPLAY_UNAVAILABLE` (the client never retries it automatically).
 */
export type ReplayStrategy =
  | { kind: 'full' }
  | {
      kind: 'reference';
      /** Picks the reference to store from the output. JSON-serialisable. */
      toReference(output: unknown): unknown;
      /** Rebuilds the response for the current caller, or returns null if the resource is gone. */
      rebuild(reference: unknown, ctx: unknown): Promise<unknown> | unknown;
    }
  | { kind: 'encrypted'; cipher: TextCipher }
  | { kind: 'redacted'; redact(output: unknown): unknown }
  | { kind: 'none' };

/** Stored bodies of the non-`full` strategies start with a tag; JSON text never starts with `idem:`. */
export const STORED_TAGS = {
  reference: 'idem:ref:',
  encrypted: 'idem:enc:',
  none: 'idem:none:',
} as const;
