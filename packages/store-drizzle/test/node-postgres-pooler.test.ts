/**
 * The store on pg behind PgBouncer in transaction mode (a private PgBouncer started here, in front
 * of the server IDEM_TEST_ADMIN_URL names): the claim and commit cases of the shared suite, and a
 * burst of fresh requests recorded at commit, all through the pooler. The store's statements are
 * unnamed, so nothing needs a prepared statement that the next transaction's server connection
 * would lack.
 */
import { randomUUID } from 'node:crypto';
import {
  createTestDatabase,
  pgBouncerAvailable,
  postgresAvailable,
  startPgBouncer,
  type PgBouncer,
  type TestDatabase,
} from '@idem/fixtures';
import { sql, type SQL } from 'drizzle-orm';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeRows } from '../src/drizzle/executeRows.js';
import { createNodePostgresStore, migrate } from '../src/node-postgres/index.js';
import { claimCases } from './conformance/claimCases.js';
import { commitCases } from './conformance/commitCases.js';
import { outcomeRecord, type ConformanceTarget } from './conformanceTarget.js';

const available = (await postgresAvailable()) && pgBouncerAvailable();

describe.skipIf(!available)('node-postgres behind PgBouncer in transaction mode', () => {
  let bouncer: PgBouncer;
  let database: TestDatabase;
  let pool: pg.Pool;
  let db: NodePgDatabase & { $client: pg.Pool };
  type Tx = Parameters<Parameters<typeof db.transaction>[0]>[0];
  let target: ConformanceTarget<Tx>;

  beforeAll(async () => {
    bouncer = await startPgBouncer();
    database = await createTestDatabase('idem_pooler_pg');
    pool = new pg.Pool({ connectionString: bouncer.through(database.url), max: 20 });
    db = drizzle({ client: pool });
    await migrate(db);
    target = {
      createStore: ({ logQuery, ...options } = {}) =>
        createNodePostgresStore(
          logQuery === undefined ? db : drizzle({ client: pool, logger: { logQuery } }),
          options,
        ),
      rows: <T>(query: SQL, tx?: Tx) => executeRows<T>(tx ?? db, query),
    };
  });

  afterAll(async () => {
    await pool?.end();
    await database?.drop();
    await bouncer?.stop();
  });

  it('goes through the pooler: two pg connections, asked in turn, share a server process', async () => {
    // On a direct connection each pg connection keeps its own server process. PgBouncer in
    // transaction mode hands the server connection just released (its most recent) to the next
    // transaction, whichever client sends it.
    const [a, b] = await Promise.all([pool.connect(), pool.connect()]);
    try {
      const pid = async (client: pg.PoolClient) =>
        (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
      const seen: [Set<number>, Set<number>] = [new Set(), new Set()];
      for (let round = 0; round < 3; round++) {
        seen[0].add(await pid(a!));
        seen[1].add(await pid(b!));
      }
      expect([...seen[0]].some((id) => seen[1].has(id))).toBe(true);
    } finally {
      a!.release();
      b!.release();
    }
  });

  claimCases(() => target);
  commitCases(() => target);

  it('answers 100 concurrent fresh requests recorded at commit, each recorded once', async () => {
    const store = target.createStore();
    const scope = `pooler:${randomUUID()}`;
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        store.commitWithRecord(async (tx) => {
          await executeRows(tx, sql`select ${i}::int as i`);
          return { value: i, record: outcomeRecord({ scope }) };
        }),
      ),
    );
    expect(results).toEqual(
      Array.from({ length: 100 }, (_, i) => ({ kind: 'recorded', value: i })),
    );
    const [row] = await executeRows<{ n: number }>(
      db,
      sql`select count(*)::int as n from idem_records where scope = ${scope}`,
    );
    expect(row!.n).toBe(100);
  });
});
