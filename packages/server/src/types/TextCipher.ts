/** Encrypts and decrypts text the store keeps (stored inputs, secret results). */
export interface TextCipher {
  encrypt(plain: string): string;
  decrypt(sealed: string): string;
}
