import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { TextCipher } from '../types/TextCipher.js';

const PREFIX = 'aes256gcm:v1:';

/**
 * AES-256-GCM with a random 96-bit nonce per message, authenticated: a tampered or foreign
 * ciphertext fails to decrypt instead of yielding garbage. `key` is 32 bytes (or 64 hex chars).
 * Output: `aes256gcm:v1:<nonce>.<tag>.<ciphertext>`, base64url parts.
 */
export function aesGcmCipher(key: Uint8Array | string): TextCipher {
  const secret = typeof key === 'string' ? Buffer.from(key, 'hex') : Buffer.from(key);
  if (secret.length !== 32)
    throw new RangeError('aesGcmCipher: the key must be 32 bytes (64 hex characters)');
  return {
    encrypt(plain) {
      const nonce = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', secret, nonce);
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return `${PREFIX}${[nonce, cipher.getAuthTag(), body].map((b) => b.toString('base64url')).join('.')}`;
    },
    decrypt(sealed) {
      if (!sealed.startsWith(PREFIX)) throw new Error('aesGcmCipher: not a sealed value');
      const [nonce, tag, body] = sealed
        .slice(PREFIX.length)
        .split('.')
        .map((p) => Buffer.from(p, 'base64url'));
      if (!nonce || !tag || !body) throw new Error('aesGcmCipher: malformed sealed value');
      const decipher = createDecipheriv('aes-256-gcm', secret, nonce);
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
    },
  };
}
