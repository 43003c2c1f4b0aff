/// <reference types="node" />
/**
 * `@idem/testing`: idem's gates on your own procedures, from your own test runner. The app
 * (your router and context on the database and store the kit gives it) in `app/`, the gates in
 * `gates/`.
 */
export { defineIdemTestApp } from './app/defineIdemTestApp.js';
export type {
  IdemTestApp,
  IdemTestAppDefinition,
  IdemTestAppFactory,
  IdemTestAppInstance,
  IdemTestAppParts,
  IdemTestContext,
  IdemTestContextOptions,
} from './app/defineIdemTestApp.js';
export { openIdemTestDatabase } from './app/IdemTestDatabase.js';
export type {
  IdemTestConnection,
  IdemTestDatabase,
  IdemTestDatabaseOptions,
  IdemTestDb,
  IdemTestStore,
  IdemTestTx,
} from './app/IdemTestDatabase.js';
export { startIdemTestApp } from './app/startIdemTestApp.js';
export type {
  IdemTestRun,
  IdemTestServer,
  IdemTestServerInfo,
  StartIdemTestAppOptions,
} from './app/startIdemTestApp.js';
export { IdemTestTimeoutError } from './app/IdemTestAnswer.js';
export type { IdemTestAnswer, IdemTestRequestOptions } from './app/IdemTestAnswer.js';
export type { MutationInput, MutationPath } from './app/mutationPaths.js';
