import type { ConformanceTarget } from './conformanceTarget.js';
import { cancelCases } from './conformance/cancelCases.js';
import { claimCases } from './conformance/claimCases.js';
import { clockCases } from './conformance/clockCases.js';
import { commitCases } from './conformance/commitCases.js';
import { operatorCases } from './conformance/operatorCases.js';
import { recoveryCases } from './conformance/recoveryCases.js';
import { takeoverFenceCases } from './conformance/takeoverFenceCases.js';
import { transactionCases } from './conformance/transactionCases.js';
import { workerCases } from './conformance/workerCases.js';

/**
 * The behaviour every store must have, the same on every driver, declared inside the caller's
 * `describe`. `target` is read when the tests run (after the caller's `beforeAll`).
 */
export function storeConformance<TTx>(target: () => ConformanceTarget<TTx>): void {
  claimCases(target);
  clockCases(target);
  transactionCases(target);
  commitCases(target);
  recoveryCases(target);
  takeoverFenceCases(target);
  workerCases(target);
  cancelCases(target);
  operatorCases(target);
}
