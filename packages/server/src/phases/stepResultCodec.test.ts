import type { RecoveryStore } from '@idem/contract';
import { describe, expect, it } from 'vitest';
import { aesGcmCipher } from '../replay/aesGcmCipher.js';
import { createIdempotency } from '../createIdempotency.js';
import type { IdemContext } from '../types/IdemRequest.js';
import type { IdemJob } from '../types/IdemJob.js';
import type { ReplayStrategy } from '../types/ReplayStrategy.js';
import { jsonSerializer } from '../replay/jsonSerializer.js';
import { stepResultCodec } from './stepResultCodec.js';

const cipher = aesGcmCipher('b'.repeat(64));
const inputCipher = aesGcmCipher('c'.repeat(64));
const secret = { token: 'tok_secret_123' };

function codec(replay: ReplayStrategy, withInputCipher = true) {
  return stepResultCodec({
    options: { replay },
    runtime: { serializer: jsonSerializer, inputCipher: withInputCipher ? inputCipher : null },
  } as unknown as Pick<IdemJob, 'options' | 'runtime'>);
}

describe('stepResultCodec', () => {
  it.each<[string, ReplayStrategy, boolean]>([
    ['full', { kind: 'full' }, true],
    ['encrypted', { kind: 'encrypted', cipher }, false],
    ['redacted', { kind: 'redacted', redact: () => ({}) }, false],
    ['none', { kind: 'none' }, false],
    ['reference', { kind: 'reference', toReference: () => 1, rebuild: () => 1 }, false],
  ])('%s: round-trips a step result; readable at rest: %s', (_, replay, readable) => {
    const { encode, decode } = codec(replay);
    const stored = encode(secret);
    expect(stored.includes('tok_secret_123')).toBe(readable);
    expect(decode(stored)).toEqual(secret);
  });

  it('refuses an external-mode procedure whose steps must be sealed when there is no inputCipher', () => {
    const store = {} as RecoveryStore<unknown>;
    const idem = createIdempotency({
      keySecret: 'k'.repeat(32),
      store,
      scope: (ctx: IdemContext & { a: string }) => ctx.a,
    });
    expect(() => idem.procedure({ mode: 'external', replay: { kind: 'none' } })).toThrow(
      /inputCipher/,
    );
    expect(() =>
      idem.procedure({ mode: 'external', replay: { kind: 'encrypted', cipher } }),
    ).not.toThrow();
    expect(() => idem.procedure({ replay: { kind: 'none' } })).not.toThrow();
  });
});
