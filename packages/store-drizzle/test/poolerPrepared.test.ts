/**
 * Prepared statements behind PgBouncer 1.18 in transaction mode (a private PgBouncer started
 * here, in front of the server IDEM_TEST_ADMIN_URL names), the pooler most hosted PostgreSQL
 * offers. A postgres.js client that prepares (its default) is refused before the store's first
 * statement and by `migrate`, with an error naming the two settings; with them, a burst of calls
 * is answered in full, on both drivers; and with the check skipped, the statement bound still
 * answers every call.
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
import { sql } from 'drizzle-orm';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { drizzle } from 'drizzle-orm/postgres-js';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RecoveryStore } from '@idem/contract';
import { executeRows } from '../src/drizzle/executeRows.js';
import { createNodePostgresStore } from '../src/node-postgres/index.js';
import {
  createPostgresJsStore,
  migrate,
  PreparedStatementsBehindPoolerError,
  StatementTimeoutError,
} from '../src/postgres-js/index.js';
import { claimInput, outcomeRecord } from './conformanceTarget.js';

const available = (await postgresAvailable()) && pgBouncerAvailable();

/** The two settings the refusal must name. */
const FIX = /prepare: false.*preparedStatements: false/s;

/**
 * What a keyed request of the default local mode does with the store (the server's
 * executeAtCommit): read the key, then run the handler's statement and record the outcome at
 * commit. The kind the store answered, or the error it threw.
 */
async function request<TTx>(
  store: RecoveryStore<TTx>,
  scope: string,
  i: number,
  work: (tx: TTx) => Promise<unknown>,
): Promise<string> {
  try {
    await store.readAnswer({ scope, procedure: 'p', keyHash: `k${i}` });
    const recorded = await store.commitWithRecord(async (tx) => {
      await work(tx);
      return { value: i, record: outcomeRecord({ scope, keyHash: `k${i}` }) };
    });
    return recorded.kind;
  } catch (error) {
    return error instanceof StatementTimeoutError ? 'timeout' : 'error';
  }
}

describe.skipIf(!available)('prepared statements behind PgBouncer in transaction mode', () => {
  let bouncer: PgBouncer;
  let database: TestDatabase;
  /** Counts the rows of `scope`, directly (never through the pooler). */
  let rowsOf: (scope: string) => Promise<{ n: number; keys: number }>;
  let direct: postgres.Sql;

  beforeAll(async () => {
    bouncer = await startPgBouncer();
    database = await createTestDatabase('idem_pooler_prepared');
    direct = postgres(database.url, { max: 2, onnotice: () => {} });
    await migrate(drizzle(direct));
    rowsOf = async (scope) => {
      const [row] = await direct<{ n: number; keys: number }[]>`
        select count(*)::int as n, count(distinct key_hash)::int as keys
        from idem_records where scope = ${scope}`;
      return row!;
    };
  });

  afterAll(async () => {
    await direct?.end({ timeout: 1 });
    await database?.drop();
    await bouncer?.stop();
  });

  it('migrate refuses a postgres.js client that prepares, naming the two settings', async () => {
    const client = postgres(bouncer.through(database.url), { max: 2, onnotice: () => {} });
    try {
      const refused = migrate(drizzle(client));
      await expect(refused).rejects.toBeInstanceOf(PreparedStatementsBehindPoolerError);
      await expect(refused).rejects.toThrow(FIX);
      // The same database reached directly migrates (a no-op here), prepared or not.
      await migrate(drizzle(direct));
    } finally {
      await client.end({ timeout: 1 });
    }
  });

  it('a store on such a client refuses every call before its first statement, and says so once', async () => {
    const client = postgres(bouncer.through(database.url), { max: 4, onnotice: () => {} });
    const warnings: string[] = [];
    const onWarning = (message: string) => warnings.push(message);
    const stores = [
      createPostgresJsStore(drizzle(client), { onWarning }),
      createPostgresJsStore(drizzle(client), { onWarning }),
    ];
    const scope = `refused:${randomUUID()}`;
    try {
      for (const store of stores) {
        await expect(store.claim(claimInput({ scope }))).rejects.toThrow(FIX);
        await expect(store.readAnswer({ scope, procedure: 'p', keyHash: 'k' })).rejects.toThrow(
          PreparedStatementsBehindPoolerError,
        );
        await expect(store.transaction(async () => 'ran')).rejects.toThrow(FIX);
      }
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(FIX);
      expect(await rowsOf(scope)).toEqual({ n: 0, keys: 0 });
    } finally {
      await client.end({ timeout: 1 });
    }
  });

  it('a client that prepares on a direct connection is not refused', async () => {
    const client = postgres(database.url, { max: 4, onnotice: () => {} });
    const warnings: string[] = [];
    const store = createPostgresJsStore(drizzle(client), { onWarning: (m) => warnings.push(m) });
    const scope = `direct:${randomUUID()}`;
    try {
      await migrate(drizzle(client));
      expect(await store.claim(claimInput({ scope }))).toMatchObject({ kind: 'claimed' });
      expect(warnings).toEqual([]);
    } finally {
      await client.end({ timeout: 1 });
    }
  });

  it('with the two settings, postgres.js answers 100 concurrent requests, each recorded once', async () => {
    const client = postgres(bouncer.through(database.url), {
      max: 10,
      prepare: false,
      onnotice: () => {},
    });
    const db = drizzle(client);
    const warnings: string[] = [];
    await migrate(db);
    const store = createPostgresJsStore(db, {
      preparedStatements: false,
      onWarning: (m) => warnings.push(m),
    });
    const scope = `burst-js:${randomUUID()}`;
    try {
      const answers = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          request(store, scope, i, (tx) => executeRows(tx, sql`select ${i}::int as i`)),
        ),
      );
      expect(answers).toEqual(Array.from({ length: 100 }, () => 'recorded'));
      expect(await rowsOf(scope)).toEqual({ n: 100, keys: 100 });
      expect(warnings).toEqual([]);
    } finally {
      await client.end({ timeout: 1 });
    }
  });

  it('node-postgres (nothing it runs is a named statement) answers 100 concurrent requests, each recorded once', async () => {
    const pool = new pg.Pool({ connectionString: bouncer.through(database.url), max: 10 });
    const store = createNodePostgresStore(drizzlePg({ client: pool }));
    const scope = `burst-pg:${randomUUID()}`;
    try {
      const answers = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          request(store, scope, i, (tx) => executeRows(tx, sql`select ${i}::int as i`)),
        ),
      );
      expect(answers).toEqual(Array.from({ length: 100 }, () => 'recorded'));
      expect(await rowsOf(scope)).toEqual({ n: 100, keys: 100 });
    } finally {
      await pool.end();
    }
  });

  it('with the check skipped and prepared statements on, the bound still answers every call, and nothing is duplicated', async () => {
    // The set-up that left requests unanswered for minutes: postgres.js preparing through the
    // pooler. Some calls fail (missing statements, cancelled waits); none goes unanswered.
    const bound = 1_000;
    const client = postgres(bouncer.through(database.url), { max: 10, onnotice: () => {} });
    const store = createPostgresJsStore(drizzle(client), {
      poolerProbe: false,
      statementTimeoutMs: bound,
      onWarning: () => {},
    });
    const scope = `unchecked:${randomUUID()}`;
    try {
      const timed = await Promise.all(
        Array.from({ length: 100 }, async (_, i) => {
          const started = performance.now();
          // No statement of the handler's own: only idem's, each with its bound.
          const answer = await request(store, scope, i, async () => {});
          return { answer, ms: performance.now() - started };
        }),
      );
      // A request runs three bounded steps here: the read, BEGIN, and the record with COMMIT
      // (sent together); the slack is for the event loop of a loaded machine.
      for (const { ms } of timed) expect(ms).toBeLessThan(3 * bound + 5_000);
      const recorded = timed.filter(({ answer }) => answer === 'recorded').length;
      const { n, keys } = await rowsOf(scope);
      expect(n).toBe(keys);
      expect(n).toBeGreaterThanOrEqual(recorded);
    } finally {
      await client.end({ timeout: 0 });
    }
  });
});
