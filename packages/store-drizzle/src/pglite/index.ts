export { createPgliteStore } from './createPgliteStore.js';
export type { PgliteIdempotencyStore, PgliteStoreOptions } from './createPgliteStore.js';
export { migrate } from './migrate.js';
