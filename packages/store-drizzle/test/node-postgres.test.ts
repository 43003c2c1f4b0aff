import { createTestDatabase, postgresAvailable, type TestDatabase } from '@idem/fixtures';
import { sql, type SQL } from 'drizzle-orm';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import { migrate as drizzleMigrate } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { executeRows } from '../src/drizzle/executeRows.js';
import {
  createNodePostgresStore,
  migrate,
  type NodePostgresIdempotencyStore,
} from '../src/node-postgres/index.js';
import { claimedRecord, claimInput, existingRecord, storedResponse } from './conformanceTarget.js';
import { migrationConformance } from './migrationConformance.js';
import { recoveryConcurrency, type ConcurrencyTarget } from './recoveryConcurrency.js';
import { storeConformance } from './storeConformance.js';

const available = await postgresAvailable();

describe.skipIf(!available)('node-postgres store', () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let db: NodePgDatabase & { $client: pg.Pool };
  type Tx = Parameters<Parameters<typeof db.transaction>[0]>[0];
  let target: ConcurrencyTarget<Tx>;
  /** The pools of `separateStore`, closed after the suite. */
  const separate: pg.Pool[] = [];

  beforeAll(async () => {
    database = await createTestDatabase('idem_store_pg');
    pool = new pg.Pool({ connectionString: database.url, max: 10 });
    db = drizzle({ client: pool });
    await migrate(db);
    target = {
      createStore: ({ logQuery, ...options } = {}) =>
        createNodePostgresStore(
          logQuery === undefined ? db : drizzle({ client: pool, logger: { logQuery } }),
          options,
        ),
      rows: <T>(query: SQL, tx?: Tx) => executeRows<T>(tx ?? db, query),
      separateStore: (options) => {
        const own = new pg.Pool({ connectionString: database.url, max: 1 });
        separate.push(own);
        return createNodePostgresStore(drizzle({ client: own }), options);
      },
    };
  });

  afterAll(async () => {
    await Promise.all(separate.map((own) => own.end()));
    await pool?.end();
    await database?.drop();
  });

  storeConformance(() => target);
  recoveryConcurrency(() => target);

  it('50 concurrent claims of one key on 10 connections: one claimed, 49 existing', async () => {
    const input = claimInput();
    const store = target.createStore();
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => store.claim({ ...input, owner: `worker-${i}` })),
    );
    expect(results.filter((r) => r.kind === 'claimed')).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'existing')).toHaveLength(49);
  });

  it('runs every statement unnamed: nothing is prepared on the server', async () => {
    // One connection, so the session asked afterwards is the one every statement ran on.
    const own = new pg.Pool({ connectionString: database.url, max: 1 });
    try {
      const store = createNodePostgresStore(drizzle({ client: own }));
      const input = claimInput();
      const record = claimedRecord(await store.claim(input));
      await store.transaction((tx) => store.complete(record, storedResponse(), tx));
      expect(existingRecord(await store.claim(input)).state).toBe('COMPLETED');
      const { rows } = await own.query<{ n: number }>(
        'select count(*)::int as n from pg_prepared_statements',
      );
      expect(rows[0]!.n).toBe(0);
    } finally {
      await own.end();
    }
  });
});

describe('createNodePostgresStore refuses what is not a pool', () => {
  it('a single Client: a type error, and a TypeError naming the fix', () => {
    const client = new pg.Client({ connectionString: 'postgres://127.0.0.1:1/none' });
    const single = drizzle({ client });
    // @ts-expect-error a Drizzle database over one Client is not a store's database
    expect(() => createNodePostgresStore(single)).toThrow(/drizzle\(new Pool/);
  });

  it('a database over a Pool types as the node-postgres store', () => {
    const pool = new pg.Pool({ connectionString: 'postgres://127.0.0.1:1/none' });
    const store = createNodePostgresStore(drizzle({ client: pool }), { onWarning: () => {} });
    expectTypeOf(store).toEqualTypeOf<NodePostgresIdempotencyStore>();
    void pool.end();
  });
});

describe.skipIf(!available)('node-postgres migrations', () => {
  migrationConformance('node-postgres', async () => {
    const database = await createTestDatabase('idem_migrate_pg');
    const pool = new pg.Pool({ connectionString: database.url, max: 2 });
    const db = drizzle({ client: pool });
    return {
      migrate: () => migrate(db),
      migrateWith: (config) => drizzleMigrate(db, config),
      rows: (query) => executeRows(db, query),
      [Symbol.asyncDispose]: async () => {
        await pool.end();
        await database.drop();
      },
    };
  });

  it('runs nothing on a database that is up to date, and migrates a fresh one', async () => {
    await using database = await createTestDatabase('idem_migrate_quiet_pg');
    const pool = new pg.Pool({ connectionString: database.url, max: 1 });
    const statements: string[] = [];
    const notices: string[] = [];
    pool.on('connect', (client) =>
      client.on('notice', (notice) => notices.push(String(notice.message))),
    );
    try {
      const db = drizzle({ client: pool, logger: { logQuery: (query) => statements.push(query) } });
      await migrate(db);
      const [journal] = await executeRows<{ n: number }>(
        db,
        sql`select count(*)::int as n from drizzle.__idem_migrations`,
      );
      expect(journal!.n).toBeGreaterThanOrEqual(2);
      statements.length = 0;
      notices.length = 0;
      await migrate(db);
      await migrate(db);
      expect(notices).toEqual([]);
      // The journal's two reads, twice: no DDL.
      expect(statements).toHaveLength(4);
      expect(statements.every((query) => /^select /.test(query))).toBe(true);
    } finally {
      await pool.end();
    }
  });
});
