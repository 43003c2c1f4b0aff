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
export { pgBouncerAvailable, startPgBouncer } from './pgBouncer.js';
export type { PgBouncer } from './pgBouncer.js';
export { createPrivateCluster, createStandby, privateClustersAvailable } from './privateCluster.js';
export type { PrivateCluster } from './privateCluster.js';
export { freePort } from './systemUser.js';
export { FaultProxy, htmlPage } from './FaultProxy.js';
export type { Fault, FaultPlan, ProxiedRequest } from './FaultProxy.js';
export { listen } from './listen.js';
export { verdaccioAvailable, VERDACCIO_VERSION } from './verdaccio.js';
