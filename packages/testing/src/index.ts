export {
  adminUrl,
  createTestDatabase,
  postgresAvailable,
  postgresRequired,
} from './testDatabase.js';
export type { TestDatabase } from './testDatabase.js';
export { testMeter } from './testMeter.js';
export type { TestMeter } from './testMeter.js';
export { httpPost } from './httpPost.js';
export type { HttpResult } from './httpPost.js';
