/**
 * The in-memory store of the unit tests, held to the store contract's cases (the ones the real
 * stores of `@idem/store-drizzle` pass on PGlite and PostgreSQL): what the unit tests decide
 * against it is what a store would answer. Its deliberate differences (memoryStore.ts) are
 * reached by none of the cases, so none is skipped.
 */
import { storeContractCases } from '@idem/fixtures';
import { describe } from 'vitest';
import { MemoryStore } from './memoryStore.js';

describe('MemoryStore, held to the store contract', () => {
  const store = new MemoryStore();
  storeContractCases(() => ({ store: () => store, laterStore: (shiftMs) => store.later(shiftMs) }));
});
