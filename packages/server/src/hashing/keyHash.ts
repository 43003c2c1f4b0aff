import type { IdempotencyStore } from '@idem/contract';
import { hmacSha256Hex } from './sha256.js';

/** The shortest `keySecret` accepted: 32 characters (e.g. `openssl rand -hex 32` gives 64). */
export const MIN_KEY_SECRET_LENGTH = 32;

/**
 * The hash the store keeps and logs show instead of an idempotency key: HMAC-SHA256 (hex) of the
 * scope and the key, keyed with the server's secret. The same key in two scopes hashes apart, and
 * without the secret nobody can confirm a guessed key (an order id, say) against the table.
 */
export function hashIdempotencyKey(key: string, secret: string, scope: string): string {
  // The scope's length first, so that ("a:b", "c") and ("a", "b:c") never meet.
  return hmacSha256Hex(secret, `${scope.length}:${scope}:${key}`);
}

/** Checks `keySecret` and `previousKeySecrets` at start-up; throws a TypeError naming the fix. */
export function checkedKeySecrets(
  keySecret: unknown,
  previous: readonly unknown[] | undefined,
): { current: string; previous: string[] } {
  const check = (secret: unknown, name: string): string => {
    if (typeof secret !== 'string' || secret.length < MIN_KEY_SECRET_LENGTH) {
      throw new TypeError(
        `createIdempotency: \`${name}\` must be a server secret of at least ${MIN_KEY_SECRET_LENGTH} characters (e.g. \`openssl rand -hex 32\`, kept in your config): idempotency keys are stored and logged as HMACs keyed with it, never as plain hashes`,
      );
    }
    return secret;
  };
  return {
    current: check(keySecret, 'keySecret'),
    previous: (previous ?? []).map((secret, i) => check(secret, `previousKeySecrets[${i}]`)),
  };
}

/**
 * The key hash a request's claim uses. With previous secrets configured (a rotation in progress),
 * a key whose record was made under a previous secret keeps that record: the live record found
 * under an older hash wins, so a retry that straddles the rotation is still a retry. Costs one
 * read per previous secret per request; drop the old secrets once their records' replay window
 * has passed.
 */
export async function claimKeyHash(
  store: IdempotencyStore<unknown>,
  secrets: { current: string; previous: readonly string[] },
  key: { scope: string; procedure: string; key: string },
): Promise<string> {
  const current = hashIdempotencyKey(key.key, secrets.current, key.scope);
  for (const secret of secrets.previous) {
    const keyHash = hashIdempotencyKey(key.key, secret, key.scope);
    const found = await store.read({ scope: key.scope, procedure: key.procedure, keyHash });
    if (found) return keyHash;
  }
  return current;
}
