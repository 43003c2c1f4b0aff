export {
  adminUrl,
  createTestDatabase,
  postgresAvailable,
  postgresRequired,
} from './testDatabase.js';
export type { TestDatabase } from './testDatabase.js';
