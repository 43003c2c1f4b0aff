/*
 * The store, bottom up; a file imports from its own floor or below, never above:
 *
 *   drizzle/         rows, statement templates, the database clock, SQLSTATEs, the record
 *                    projection, parameter checks; beside them here, schema.ts (drizzle-kit
 *                    reads it) and migrationConfig.ts, which import nothing of the package
 *   statements/      the SQL and the races it decides, by who runs it: request/ (the floor of
 *                    the three), then workers/ and operators/
 *   store/           the methods' bodies, by caller; DrizzleIdempotencyStore.ts delegates
 *   postgres-js/, node-postgres/, pglite/   the driver entries, each its own subpath
 */
export { DrizzleIdempotencyStore } from './DrizzleIdempotencyStore.js';
export type { DrizzleIdempotencyStoreOptions } from './DrizzleIdempotencyStore.js';
export { idemMigrationConfig } from './migrationConfig.js';
export { idemAudit, idemRecords } from './schema.js';
