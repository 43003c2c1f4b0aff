import { STORE_CONTRACT_GROUPS, storeContractCases } from '@idem/fixtures';
import { contractTarget, type ConformanceTarget } from './conformanceTarget.js';
import { cancelCases } from './conformance/cancelCases.js';
import { claimCases } from './conformance/claimCases.js';
import { clockCases } from './conformance/clockCases.js';
import { commitCases } from './conformance/commitCases.js';
import { operatorCases } from './conformance/operatorCases.js';
import { transactionCases } from './conformance/transactionCases.js';
import { workerCases } from './conformance/workerCases.js';

/**
 * The behaviour every store must have, the same on every driver, declared inside the caller's
 * `describe`: the store contract's cases (`storeContractCases` of `@idem/fixtures`, through the
 * store's interface alone), and the cases that read or put rows in place with SQL. `target` is
 * read when the tests run (after the caller's `beforeAll`).
 */
export function storeConformance<TTx>(target: () => ConformanceTarget<TTx>): void {
  // The claim and commit groups run with the SQL cases of their files (a pooler's suite runs those).
  const groups = STORE_CONTRACT_GROUPS.filter((group) => group !== 'claim' && group !== 'commit');
  storeContractCases(() => contractTarget(target()), { groups });
  claimCases(target);
  clockCases(target);
  transactionCases(target);
  commitCases(target);
  workerCases(target);
  cancelCases(target);
  operatorCases(target);
}
