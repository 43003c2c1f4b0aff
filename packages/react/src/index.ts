export { useIntentKey } from './useIntentKey.js';
export type { IntentKeyHandle, UseIntentKeyOptions } from './useIntentKey.js';
