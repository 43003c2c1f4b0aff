import type { TRPCError } from '@trpc/server';
import { idemMisuse } from '../errors/idemErrors.js';
import type { IdemJob } from '../types/IdemJob.js';
import type { ReplayStrategy } from '../types/ReplayStrategy.js';
import { STORED_TAGS } from '../types/ReplayStrategy.js';
import type { ResultSerializer } from '../types/ResultSerializer.js';

/**
 * The text the store keeps for a job's successful output, or, when the procedure's serializer or
 * replay strategy cannot write it, the 500 that names the fix (`idemMisuse.unstorableOutput`).
 */
export function storedOutput(job: IdemJob, output: unknown): string | TRPCError {
  try {
    return storeResult(output, job.options.replay, job.runtime.serializer);
  } catch (cause) {
    return idemMisuse.unstorableOutput(job.claim.procedure, cause);
  }
}

/** The text the store keeps for a successful output, by the procedure's replay strategy. */
export function storeResult(
  output: unknown,
  strategy: ReplayStrategy,
  serializer: ResultSerializer,
): string {
  switch (strategy.kind) {
    case 'full':
      return serializer.serialize(output);
    case 'reference':
      return STORED_TAGS.reference + JSON.stringify(strategy.toReference(output) ?? null);
    case 'encrypted':
      return STORED_TAGS.encrypted + strategy.cipher.encrypt(serializer.serialize(output));
    case 'redacted':
      return serializer.serialize(strategy.redact(output));
    case 'none':
      return STORED_TAGS.none;
  }
}
