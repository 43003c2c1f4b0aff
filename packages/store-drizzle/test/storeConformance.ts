import type { ConformanceTarget } from './conformanceTarget.js';
import { claimCases } from './conformance/claimCases.js';
import { clockCases } from './conformance/clockCases.js';
import { transactionCases } from './conformance/transactionCases.js';

/**
 * The behaviour every store must have, the same on every driver, declared inside the caller's
 * `describe`. `target` is read when the tests run (after the caller's `beforeAll`).
 */
export function storeConformance<TTx>(target: () => ConformanceTarget<TTx>): void {
  claimCases(target);
  clockCases(target);
  transactionCases(target);
}
