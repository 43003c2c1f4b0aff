import { storeContractCases } from '@idem/fixtures';
import { contractTarget, type ConformanceTarget } from '../conformanceTarget.js';

/**
 * Claims, completions, failures, releases and their fences: the store contract's claim cases
 * (`storeContractCases` of `@idem/fixtures`), which need nothing but the store's interface.
 */
export function claimCases<TTx>(target: () => ConformanceTarget<TTx>): void {
  storeContractCases(() => contractTarget(target()), { groups: ['claim'] });
}
