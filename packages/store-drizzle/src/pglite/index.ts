export { createPgliteStore } from './createPgliteStore.js';
export type { PgliteIdempotencyStore } from './createPgliteStore.js';
export { migrate } from './migrate.js';
