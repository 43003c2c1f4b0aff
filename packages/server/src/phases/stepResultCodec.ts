import type { IdemJob } from '../types/IdemJob.js';
import { STORED_TAGS } from '../types/ReplayStrategy.js';

/**
 * How the results of a procedure's steps are kept in the record's `steps`, by its replay strategy:
 * a step result (a token an external call returned, say) is no less secret than the output.
 *
 * - `full`: the serialized result, as the output itself is stored.
 * - `encrypted`: sealed with the strategy's cipher (`idem:enc:` + ciphertext).
 * - `reference`, `redacted`, `none`: these never store the raw output, yet resuming needs each
 *   finished step's result (the handler runs again from the top and continues from it). So the
 *   result is sealed with the app's `inputCipher` (the key that already seals the stored input),
 *   never kept readable. `createIdempotency` refuses such a procedure in external mode without
 *   an `inputCipher`. The results are erased by `eraseScope` and deleted with the record.
 *
 * Decoding reads what the tag says, so a record written before a strategy change still resumes
 * as long as its cipher is configured.
 */
export function stepResultCodec(job: Pick<IdemJob, 'options' | 'runtime'>) {
  const { serializer, inputCipher } = job.runtime;
  const strategy = job.options.replay;
  const cipher =
    strategy.kind === 'encrypted' ? strategy.cipher : strategy.kind === 'full' ? null : inputCipher;
  return {
    encode(value: unknown): string {
      const text = serializer.serialize(value);
      return cipher ? STORED_TAGS.encrypted + cipher.encrypt(text) : text;
    },
    decode(stored: string): unknown {
      if (!stored.startsWith(STORED_TAGS.encrypted)) return serializer.deserialize(stored);
      if (!cipher) throw new Error('idem: a step result is sealed and no cipher is configured');
      return serializer.deserialize(cipher.decrypt(stored.slice(STORED_TAGS.encrypted.length)));
    },
  };
}

/** Whether a procedure's steps need the app's `inputCipher` (see {@link stepResultCodec}). */
export function stepsNeedInputCipher(replayKind: string): boolean {
  return replayKind === 'reference' || replayKind === 'redacted' || replayKind === 'none';
}
