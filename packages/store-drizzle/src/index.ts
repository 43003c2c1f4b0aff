export { DrizzleIdempotencyStore } from './DrizzleIdempotencyStore.js';
export type { DrizzleIdempotencyStoreOptions } from './DrizzleIdempotencyStore.js';
export { idemMigrationConfig } from './migrationConfig.js';
export { idemAudit, idemRecords } from './schema.js';
