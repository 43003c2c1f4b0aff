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
  IdemTestAppRouter,
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
export { concurrencyGate } from './gates/concurrencyGate.js';
export type { ConcurrencyGateOptions } from './gates/concurrencyGate.js';
export { mismatchGate } from './gates/mismatchGate.js';
export type { MismatchGateOptions } from './gates/mismatchGate.js';
export { scopeGate } from './gates/scopeGate.js';
export type { ScopeGateOptions } from './gates/scopeGate.js';
export { replayGate } from './gates/replayGate.js';
export type { ReplayGateOptions } from './gates/replayGate.js';
export { failureGate } from './gates/failureGate.js';
export type { FailureGateOptions, IdemGateFailure } from './gates/failureGate.js';
export { clockGate } from './gates/clockGate.js';
export type { ClockGateOptions } from './gates/clockGate.js';
export type {
  IdemGateEffectTools,
  IdemGateInput,
  IdemGateInputContext,
  IdemGateOptions,
  IdemGateReport,
} from './gates/GateRun.js';
export { IdemGateError, isIdemGateError } from './gates/IdemGateError.js';
export type { IdemGateFinding, IdemGateName } from './gates/IdemGateError.js';
export { crashPointsGate } from './crash/crashPointsGate.js';
export type {
  CrashPointsGateOptions,
  CrashPointsReport,
  CrashRun,
} from './crash/crashPointsGate.js';
export type { CrashBoundary } from './crash/crashPoints.js';
export { CrashPointsGateError, isCrashPointsGateError } from './crash/CrashPointsGateError.js';
export type { CrashProblem } from './crash/CrashPointsGateError.js';
export { downstreamRecorder } from './crash/downstreamRecorder.js';
export type { DownstreamRecorder, StepFunction } from './crash/downstreamRecorder.js';
export type { CrashTestAppInstance } from './crash/crashTestApp.js';
