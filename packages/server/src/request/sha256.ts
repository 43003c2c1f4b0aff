import { createHash, createHmac, hash as oneShotHash } from 'node:crypto';

/**
 * SHA-256 and HMAC-SHA256 of the request's hot path: the key's hash and the input's fingerprint,
 * once per request.
 *
 * Where `crypto.hash` exists (Node 20.12 and later) they go through it: it looks the digest up
 * once per process, where `createHash` and `createHmac` look it up in OpenSSL 3's provider
 * tables on every call. Under load that lookup, and `createHmac`'s key set-up, cost more than
 * the hashing itself (the issue-14 profile: about 20 µs of CPU per request, most of idem's own
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

/** The inner and outer padded keys of one secret (RFC 2104), made once per secret. */
interface HmacPads {
  inner: Buffer;
  outer: Buffer;
}
const padsBySecret = new Map<string, HmacPads>();
const MAX_SECRETS = 64;

function padsOf(secret: string): HmacPads {
  let pads = padsBySecret.get(secret);
  if (!pads) {
    let key = Buffer.from(secret, 'utf8');
    if (key.length > BLOCK_BYTES) key = createHash('sha256').update(key).digest();
    const inner = Buffer.alloc(BLOCK_BYTES, 0x36);
    const outer = Buffer.alloc(BLOCK_BYTES, 0x5c);
    for (let i = 0; i < key.length; i++) {
      inner[i]! ^= key[i]!;
      outer[i]! ^= key[i]!;
    }
    pads = { inner, outer };
    // A server has its current secret and a few previous ones; the bound only keeps a process
    // that makes many apps (tests, say) from holding every secret it ever saw.
    if (padsBySecret.size >= MAX_SECRETS) padsBySecret.clear();
    padsBySecret.set(secret, pads);
  }
  return pads;
}

/** HMAC-SHA256 (hex) of `text` (UTF-8) keyed with `secret`: `createHmac`'s bytes. */
export function hmacSha256Hex(secret: string, text: string): string {
  if (!fast) return createHmac('sha256', secret).update(text).digest('hex');
  const { inner, outer } = padsOf(secret);
  const innerDigest = oneShotHash(
    'sha256',
    Buffer.concat([inner, Buffer.from(text, 'utf8')]),
    'buffer',
  );
  return oneShotHash('sha256', Buffer.concat([outer, innerDigest]), 'hex');
}
