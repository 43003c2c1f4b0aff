/**
 * The bound on every statement of the store (`statementTimeoutMs`), on postgres.js and
 * node-postgres, directly and through PgBouncer 1.18 in transaction mode (where
 * `statement_timeout` cannot be set per client): a statement blocked on a row lock that another
 * connection holds, inside a transaction and outside one, is cancelled at the bound (PostgreSQL
 * stops waiting: no backend of the database is left waiting on a lock), the call rejects with a
 * `StatementTimeoutError`, and the store goes on working. The blocking is controlled (a lock
 * held until the test lets it go), the bound small, and a nonsensical bound is a start-up error.
 */
import {
  claimedRecord,
  createTestDatabase,
  pgBouncerAvailable,
  postgresAvailable,
  startPgBouncer,
  type PgBouncer,
  type TestDatabase,
} from '@idem/fixtures';
import type { RecoveryStore } from '@idem/contract';
import { sql } from 'drizzle-orm';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { drizzle } from 'drizzle-orm/postgres-js';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNodePostgresStore } from '../src/node-postgres/index.js';
import {
  createPostgresJsStore,
  DEFAULT_STATEMENT_TIMEOUT_MS,
  migrate,
  StatementTimeoutError,
} from '../src/postgres-js/index.js';
import { claimInput } from './conformanceTarget.js';

const available = await postgresAvailable();
const withBouncer = available && pgBouncerAvailable();

/** The bound here: far below the lock waits it cuts, far above a statement on a loaded machine. */
const BOUND = 1_000;
/** The claim's own lock wait: long, so that only the bound can end it. */
const LOCK_WAIT = 60_000;

describe('statementTimeoutMs at start-up', () => {
  // Lazy clients: nothing connects.
  const client = postgres('postgres://idem@127.0.0.1:1/never', { max: 1 });
  const pool = new pg.Pool({ connectionString: 'postgres://idem@127.0.0.1:1/never' });
  afterAll(async () => {
    await client.end();
    await pool.end();
  });

  it('refuses a bound that is not a whole number of milliseconds from 1 to 2^31 - 1', () => {
    for (const statementTimeoutMs of [0, -1, 1.5, Number.NaN, Infinity, 2 ** 31]) {
      expect(() =>
        createPostgresJsStore(drizzle(client), { statementTimeoutMs, poolerProbe: false }),
      ).toThrow(RangeError);
      expect(() =>
        createNodePostgresStore(drizzlePg({ client: pool }), { statementTimeoutMs }),
      ).toThrow(
        /statementTimeoutMs must be an integer number of milliseconds from 1 to 2147483647/,
      );
    }
    expect(DEFAULT_STATEMENT_TIMEOUT_MS).toBe(10_000);
    createPostgresJsStore(drizzle(client), { statementTimeoutMs: 1, poolerProbe: false });
    createNodePostgresStore(drizzlePg({ client: pool }), { statementTimeoutMs: 2 ** 31 - 1 });
  });
});

describe.skipIf(!available)('a statement blocked past statementTimeoutMs', () => {
  let database: TestDatabase;
  let bouncer: PgBouncer | undefined;
  /** The connection that holds the locks, and looks at the server: direct. */
  let holder: postgres.Sql;
  let holderStore: ReturnType<typeof createPostgresJsStore>;
  type HolderTx = Parameters<Parameters<typeof holderStore.transaction>[0]>[0];

  beforeAll(async () => {
    database = await createTestDatabase('idem_statement_bound');
    holder = postgres(database.url, { max: 2, onnotice: () => {} });
    await migrate(drizzle(holder));
    holderStore = createPostgresJsStore(drizzle(holder), { poolerProbe: false });
    if (withBouncer) bouncer = await startPgBouncer();
  });
  afterAll(async () => {
    await holder?.end({ timeout: 1 });
    await database?.drop();
    await bouncer?.stop();
  });

  /** The backends of the test database waiting on a lock, other than the holder's. */
  const waitingOnLocks = async () => {
    const [row] = await holder<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`;
    return row!.n;
  };

  /** Until no backend waits on a lock (the cancel reached PostgreSQL), at most 10 s. */
  const untilNoLockWait = async () => {
    const deadline = Date.now() + 10_000;
    while ((await waitingOnLocks()) > 0) {
      if (Date.now() > deadline) throw new Error('a cancelled statement still waits on its lock');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  /**
   * Runs `fn` while a transaction of the holder's store holds what `lock` takes, then rolls it
   * back. A lock that fails fails the test (rather than leave `fn` waiting).
   */
  const whileHeld = async <T>(
    lock: (tx: HolderTx) => Promise<unknown>,
    fn: () => Promise<T>,
  ): Promise<T> => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let holding!: () => void;
    const held = new Promise<void>((resolve) => (holding = resolve));
    const transaction = holderStore.transaction(async (tx) => {
      await lock(tx);
      holding();
      await released;
      throw new Error('rolled back');
    });
    const ended = transaction.then(
      () => undefined,
      (error: unknown) => error,
    );
    const first = await Promise.race([held.then(() => null), ended]);
    if (first !== null && first !== undefined && !String(first).includes('rolled back'))
      throw first;
    try {
      return await fn();
    } finally {
      release();
      await ended;
    }
  };

  const all: { name: string; via: 'direct' | 'pgbouncer' }[] = [
    { name: 'postgres.js', via: 'direct' },
    { name: 'postgres.js', via: 'pgbouncer' },
    { name: 'node-postgres', via: 'direct' },
    { name: 'node-postgres', via: 'pgbouncer' },
  ];
  const targets = all.filter(({ via }) => via === 'direct' || withBouncer);

  describe.each(targets)('$name, $via', ({ name, via }) => {
    let store: RecoveryStore<unknown>;
    let close: () => Promise<void>;

    beforeAll(async () => {
      const url = via === 'direct' ? database.url : bouncer!.through(database.url);
      if (name === 'postgres.js') {
        const client = postgres(url, { max: 4, prepare: false, onnotice: () => {} });
        store = createPostgresJsStore(drizzle(client), {
          statementTimeoutMs: BOUND,
          preparedStatements: false,
        }) as RecoveryStore<unknown>;
        close = () => client.end({ timeout: 1 });
      } else {
        const pool = new pg.Pool({ connectionString: url, max: 4 });
        store = createNodePostgresStore(drizzlePg({ client: pool }), {
          statementTimeoutMs: BOUND,
          onWarning: () => {},
        }) as RecoveryStore<unknown>;
        close = () => pool.end();
      }
    });
    afterAll(async () => {
      await close?.();
    });

    it('a claim inside a transaction, behind an uncommitted claim of the same key, is cancelled at the bound', async () => {
      const input = claimInput({ lockTimeoutMs: LOCK_WAIT });
      // The holder's own claim of the key, uncommitted: the store's claim waits behind it.
      await whileHeld(
        (tx) => holderStore.claim(input, tx),
        async () => {
          const started = performance.now();
          const claim = store.transaction((tx) => store.claim(input, tx));
          await expect(claim).rejects.toBeInstanceOf(StatementTimeoutError);
          await expect(claim).rejects.toMatchObject({ code: '57014' });
          expect(performance.now() - started).toBeLessThan(LOCK_WAIT);
          // PostgreSQL itself stopped waiting, while the lock is still held.
          await untilNoLockWait();
        },
      );
      // The store goes on: the key is free again (the holder rolled back).
      expect(await store.claim(input)).toMatchObject({ kind: 'claimed' });
    });

    it('a fenced write outside a transaction, on a row another transaction locks, is cancelled at the bound', async () => {
      const record = claimedRecord(await store.claim(claimInput()));
      await whileHeld(
        (tx) =>
          tx.execute(sql`select 1 from idem_records where id = ${record.id}::bigint for update`),
        async () => {
          const extended = store.extendLease({ id: record.id, version: record.version }, 30_000);
          await expect(extended).rejects.toBeInstanceOf(StatementTimeoutError);
          await untilNoLockWait();
        },
      );
      expect(await store.extendLease({ id: record.id, version: record.version }, 30_000)).toBe(
        true,
      );
    });
  });
});
