import { PGlite } from '@electric-sql/pglite';
import type { SQL } from 'drizzle-orm';
import { drizzle, type PgliteDatabase } from 'drizzle-orm/pglite';
import { migrate as drizzleMigrate } from 'drizzle-orm/pglite/migrator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeRows } from '../src/drizzle/executeRows.js';
import { createPgliteStore, migrate } from '../src/pglite/index.js';
import { claimInput, type ConformanceTarget } from './conformanceTarget.js';
import { migrationConformance } from './migrationConformance.js';
import { storeConformance } from './storeConformance.js';

describe('PGlite store', () => {
  let client: PGlite;
  let db: PgliteDatabase;
  type Tx = Parameters<Parameters<typeof db.transaction>[0]>[0];
  let target: ConformanceTarget<Tx>;

  beforeAll(async () => {
    client = new PGlite();
    db = drizzle({ client });
    await migrate(db);
    target = {
      createStore: ({ logQuery, ...options } = {}) =>
        createPgliteStore(
          logQuery === undefined ? db : drizzle({ client, logger: { logQuery } }),
          options,
        ),
      rows: <T>(query: SQL, tx?: Tx) => executeRows<T>(tx ?? db, query),
    };
  });

  afterAll(async () => {
    await client.close();
  });

  storeConformance(() => target);

  it('serialises 20 concurrent claims of one key: exactly one is claimed', async () => {
    const input = claimInput();
    const store = target.createStore();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => store.claim({ ...input, owner: `worker-${i}` })),
    );
    expect(results.filter((r) => r.kind === 'claimed')).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'existing')).toHaveLength(19);
  });
});

migrationConformance('PGlite', async () => {
  const client = new PGlite();
  const db = drizzle({ client });
  return {
    migrate: () => migrate(db),
    migrateWith: (config) => drizzleMigrate(db, config),
    rows: (query) => executeRows(db, query),
    [Symbol.asyncDispose]: () => client.close(),
  };
});
