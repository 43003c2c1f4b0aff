import type { ReplayStrategy } from '../replay/ReplayStrategy.js';
import { STORED_TAGS } from '../replay/ReplayStrategy.js';
import type { ResultSerializer } from '../replay/ResultSerializer.js';

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
