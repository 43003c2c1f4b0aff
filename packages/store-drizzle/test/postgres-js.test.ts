import { createTestDatabase, postgresAvailable, type TestDatabase } from '@idem/fixtures';
import { sql, type SQL } from 'drizzle-orm';
import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import { migrate as drizzleMigrate } from 'drizzle-orm/postgres-js/migrator';
import postgres, { type Sql } from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeRows } from '../src/drizzle/executeRows.js';
import { hasSqlState } from '../src/drizzle/hasSqlState.js';
import { createPostgresJsStore, migrate } from '../src/postgres-js/index.js';
import {
  claimedRecord,
  claimInput,
  existingRecord,
  Rollback,
  storedResponse,
} from './conformanceTarget.js';
import { migrationConformance } from './migrationConformance.js';
import { recoveryConcurrency, type ConcurrencyTarget } from './recoveryConcurrency.js';
import { storeConformance } from './storeConformance.js';

const available = await postgresAvailable();
const quiet = { onnotice: () => {} };

/** Resolves when `release()` is called: holds a transaction open while another one races it. */
function gate() {
  let release!: () => void;
  const opened = new Promise<void>((resolve) => (release = resolve));
  return { opened, release };
}

describe.skipIf(!available)('postgres.js store', () => {
  let database: TestDatabase;
  let client: Sql;
  let db: PostgresJsDatabase;
  type Tx = Parameters<Parameters<typeof db.transaction>[0]>[0];
  let target: ConcurrencyTarget<Tx>;
  /** The connections of `separateStore`, closed after the suite. */
  const separate: Sql[] = [];

  beforeAll(async () => {
    database = await createTestDatabase('idem_store');
    client = postgres(database.url, { max: 10, ...quiet });
    db = drizzle({ client });
    await migrate(db);
    target = {
      createStore: ({ logQuery, ...options } = {}) =>
        createPostgresJsStore(
          logQuery === undefined ? db : drizzle({ client, logger: { logQuery } }),
          options,
        ),
      rows: <T>(query: SQL, tx?: Tx) => executeRows<T>(tx ?? db, query),
      separateStore: (options) => {
        const own = postgres(database.url, { max: 1, ...quiet });
        separate.push(own);
        return createPostgresJsStore(drizzle({ client: own }), options);
      },
    };
  });

  afterAll(async () => {
    await Promise.all(separate.map((own) => own.end({ timeout: 2 })));
    await client?.end({ timeout: 2 });
    await database?.drop();
  });

  storeConformance(() => target);
  recoveryConcurrency(() => target);

  describe('real concurrency', () => {
    it('50 concurrent claims of one key on 10 connections: exactly one claimed, 49 existing', async () => {
      const input = claimInput();
      const store = target.createStore();
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => store.claim({ ...input, owner: `worker-${i}` })),
      );
      expect(results.filter((r) => r.kind === 'claimed')).toHaveLength(1);
      expect(results.filter((r) => r.kind === 'existing')).toHaveLength(49);
      const [count] = await target.rows<{ n: number }>(
        sql`SELECT count(*)::int AS n FROM idem_records WHERE key_hash = ${input.keyHash}`,
      );
      expect(count?.n).toBe(1);
    });

    it('local mode: a duplicate waiting behind an uncommitted claim gives up after lockTimeoutMs: busy, its transaction aborted', async () => {
      const input = claimInput();
      const store = target.createStore();
      const hold = gate();
      const claimedByA = gate();
      const a = store.transaction(async (tx) => {
        claimedRecord(await store.claim({ ...input, lockTimeoutMs: 200 }, tx));
        claimedByA.release();
        await hold.opened;
      });
      try {
        await claimedByA.opened;
        const started = performance.now();
        let afterBusy: unknown;
        await expect(
          store.transaction(async (tx) => {
            const result = await store.claim({ ...input, lockTimeoutMs: 200 }, tx);
            expect(result).toEqual({ kind: 'busy' });
            afterBusy = await target.rows(sql`SELECT 1`, tx).catch((error: unknown) => error);
            throw new Rollback();
          }),
        ).rejects.toBeInstanceOf(Rollback);
        const waited = performance.now() - started;
        expect(waited).toBeGreaterThanOrEqual(150);
        expect(waited).toBeLessThan(2_000);
        // PostgreSQL aborted B's transaction: in_failed_sql_transaction (25P02).
        expect(hasSqlState(afterBusy, '25P02')).toBe(true);
      } finally {
        hold.release();
        await a;
      }
      expect(existingRecord(await store.claim(input)).state).toBe('IN_PROGRESS');
    });

    it.each([
      ['commits', 'existing'],
      ['rolls back', 'claimed'],
    ] as const)(
      'local mode: when the first transaction %s while a duplicate waits, the duplicate is %s',
      async (ending, expected) => {
        const input = claimInput();
        const store = target.createStore();
        const hold = gate();
        const claimedByA = gate();
        let idOfA = '';
        const a = store
          .transaction(async (tx) => {
            const record = claimedRecord(await store.claim({ ...input, lockTimeoutMs: 5_000 }, tx));
            idOfA = record.id;
            claimedByA.release();
            await hold.opened;
            expect(await store.complete(record, storedResponse(), tx)).toBe(true);
            if (ending === 'rolls back') throw new Rollback();
          })
          .catch((error: unknown) => {
            if (!(error instanceof Rollback)) throw error;
          });
        await claimedByA.opened;

        const queries: string[] = [];
        const duplicate = target.createStore({ logQuery: (q) => queries.push(q) });
        const b = duplicate.transaction((tx) =>
          duplicate.claim({ ...input, lockTimeoutMs: 5_000 }, tx),
        );
        // Let B reach the unique index and wait there.
        await waitUntil(async () => {
          const [waiting] = await target.rows<{ n: number }>(sql`
            SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock'`);
          return (waiting?.n ?? 0) > 0;
        });
        hold.release();
        await a;
        const result = await b;
        expect(result.kind).toBe(expected);
        if (expected === 'existing') {
          expect(existingRecord(result)).toMatchObject({ id: idOfA, state: 'COMPLETED' });
          // The first statement saw no row (its snapshot predates A's commit); the second read it.
          expect(queries).toHaveLength(2);
        } else {
          expect(claimedRecord(result)).toMatchObject({ attempts: 1, takeover: false });
          expect(queries).toHaveLength(1);
        }
      },
    );
  });
});

async function waitUntil(condition: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe.skipIf(!available)('postgres.js migrations', () => {
  migrationConformance('PostgreSQL', async () => {
    const database = await createTestDatabase('idem_migrate');
    const client = postgres(database.url, { max: 2, ...quiet });
    const db = drizzle({ client });
    return {
      migrate: () => migrate(db),
      migrateWith: (config) => drizzleMigrate(db, config),
      rows: (query) => executeRows(db, query),
      [Symbol.asyncDispose]: async () => {
        await client.end({ timeout: 2 });
        await database.drop();
      },
    };
  });
});

describe.skipIf(!available)('postgres.js migrate is quiet', () => {
  it('prints no PostgreSQL notice on a database that is up to date, and migrates a fresh one', async () => {
    await using database = await createTestDatabase('idem_migrate_quiet');
    // What postgres.js would print with its default onnotice (console.log), collected instead.
    const notices: string[] = [];
    const client = postgres(database.url, {
      max: 2,
      onnotice: (notice) => notices.push(String(notice.message)),
    });
    try {
      const db = drizzle({ client });
      await migrate(db);
      const tables = await executeRows<{ n: number }>(
        db,
        sql`select count(*)::int as n from drizzle.__idem_migrations`,
      );
      expect(tables[0]!.n).toBeGreaterThanOrEqual(2);
      notices.length = 0;
      await migrate(db);
      await migrate(db);
      expect(notices).toEqual([]);
    } finally {
      await client.end({ timeout: 2 });
    }
  });
});
