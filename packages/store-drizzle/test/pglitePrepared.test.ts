import { MemoryFS, PGlite } from '@electric-sql/pglite';
import type { OutcomeRecord } from '@idem/contract';
import { sql } from 'drizzle-orm';
import { drizzle, type PgliteDatabase } from 'drizzle-orm/pglite';
import { describe, expect, it } from 'vitest';
import {
  outcomeUnlessLiveTemplate,
  readLiveTemplate,
  recordOutcomeTemplate,
} from '../src/statements/request/commitStatements.js';
import { databaseClock } from '../src/drizzle/databaseClock.js';
import { drizzleRunner, executeRows, type DrizzleRunner } from '../src/drizzle/executeRows.js';
import { createPgliteStore, migrate } from '../src/pglite/index.js';
import { pglitePreparedRunner } from '../src/pglite/preparedRunner.js';
import { claimInput, outcomeRecord } from './conformanceTarget.js';

/** A migrated PGlite of its own (its prepared statements are this test's), closed after. */
async function pglite(logQuery?: (query: string) => void) {
  const client = new PGlite();
  const db = drizzle({ client, ...(logQuery ? { logger: { logQuery } } : {}) });
  await migrate(db);
  return { client, db, [Symbol.asyncDispose]: () => client.close() };
}

/** The store's prepared statements in the session, as PostgreSQL lists them. */
function prepared(db: PgliteDatabase) {
  return executeRows<{ name: string; statement: string; prepare_time: string; runs: number }>(
    db,
    sql`SELECT name, statement, prepare_time::text AS prepare_time,
          (generic_plans + custom_plans)::int AS runs
        FROM pg_prepared_statements WHERE name LIKE 'idem\\_%' ORDER BY statement`,
  );
}

const outcome = (overrides: Partial<OutcomeRecord> = {}) =>
  outcomeRecord({ scope: 'acct_1:prepared', ...overrides });

/** The values of the outcome templates for `record` (as the store builds them). */
function outcomeValues(record: OutcomeRecord) {
  return {
    ...record,
    status: record.response.status,
    body: record.response.body,
    replayWindowMs: record.response.replayWindowMs,
    retentionMs: record.response.retentionMs,
    lockTimeout: `${record.lockTimeoutMs}ms`,
  };
}

/** The SQLSTATE of `error` or of the error it wraps (Drizzle wraps PGlite's). */
function sqlState(error: unknown): unknown {
  const e = error as { code?: unknown; cause?: { code?: unknown } };
  return e.code ?? e.cause?.code;
}

class Rollback extends Error {}

describe('PGlite prepared statements', () => {
  it("returns what Drizzle's PGlite session returns, row for row and type for type", async () => {
    await using pg = await pglite();
    const { db } = pg;
    const clock = databaseClock(0);
    const templates = {
      readLive: readLiveTemplate(clock),
      recordOutcome: recordOutcomeTemplate(clock),
      outcomeUnlessLive: outcomeUnlessLiveTemplate(clock),
    };
    const paths = { prepared: pglitePreparedRunner(db), unprepared: drizzleRunner };
    const runner = db as unknown as DrizzleRunner;
    const both = async (
      template: (typeof templates)[keyof typeof templates],
      values: (path: 'prepared' | 'unprepared') => Record<string, unknown>,
      on: DrizzleRunner = runner,
      inTransaction = false,
    ) => ({
      prepared: await paths.prepared(on, inTransaction).run(template, values('prepared')),
      unprepared: await paths.unprepared(on, inTransaction).run(template, values('unprepared')),
    });

    const record = outcome();
    await createPgliteStore(db).commitWithRecord(async () => ({ value: 0, record }));
    // A live row: every column of the projection, timestamps as PostgreSQL's strings.
    const key = { scope: record.scope, procedure: record.procedure, keyHash: record.keyHash };
    const live = await both(templates.readLive, () => key);
    expect(live.prepared).toEqual(live.unprepared);
    expect((live.prepared as { rows: unknown[] }).rows).toHaveLength(1);
    const missing = await both(templates.readLive, () => ({ ...key, keyHash: 'none' }));
    expect(missing.prepared).toEqual(missing.unprepared);
    // The INSERT without rows, in a transaction as the store runs it.
    await db.transaction(async (tx) => {
      const inserted = await both(
        templates.recordOutcome,
        () => outcomeValues(outcome()),
        tx as unknown as DrizzleRunner,
        true,
      );
      expect(inserted.prepared).toEqual(inserted.unprepared);
      expect(inserted.prepared).toMatchObject({ rows: [], affectedRows: 1 });
    });
    // ON CONFLICT DO NOTHING: no row; and a fresh key: its id.
    const skipped = await both(templates.outcomeUnlessLive, () => outcomeValues(record));
    expect(skipped.prepared).toEqual(skipped.unprepared);
    const added = await both(templates.outcomeUnlessLive, () => outcomeValues(outcome()));
    const withoutId = (result: unknown) => {
      const r = result as { rows: { id: unknown }[] };
      return { ...r, rows: r.rows.map((row) => ({ ...row, id: typeof row.id })) };
    };
    expect(withoutId(added.prepared)).toEqual(withoutId(added.unprepared));
    expect(withoutId(added.prepared)).toMatchObject({ rows: [{ id: 'string' }] });

    // And through the store: the same recovery record either way.
    const read = await createPgliteStore(db).read(record);
    expect(read).not.toBeNull();
    expect(read).toEqual(await createPgliteStore(db, { preparedStatements: false }).read(record));
  });

  it('parses each template once per PGlite instance, whatever the store, and logs every statement', async () => {
    const logged: string[] = [];
    await using pg = await pglite((query) => logged.push(query));
    const { db } = pg;
    const store = createPgliteStore(db);
    const records = [outcome(), outcome(), outcome()];
    for (const record of records) {
      expect(await store.read(record)).toBeNull();
      await store.commitWithRecord(async () => ({ value: 0, record }));
    }
    const first = await prepared(db);
    // readLive and recordOutcome, each parsed once.
    expect(first).toHaveLength(2);
    expect(first.map((s) => s.runs).sort()).toEqual([3, 3]);

    const other = createPgliteStore(drizzle({ client: pg.client }));
    for (const record of records) {
      expect(await store.read(record)).not.toBeNull();
      expect(await other.read(record)).not.toBeNull();
    }
    const after = await prepared(db);
    expect(
      after.map(({ name, statement, prepare_time }) => ({ name, statement, prepare_time })),
    ).toEqual(
      first.map(({ name, statement, prepare_time }) => ({ name, statement, prepare_time })),
    );
    expect(after.map((s) => s.runs).sort()).toEqual([3, 9]);

    const readLive = first.find((s) => s.statement.startsWith('SELECT'))!.statement;
    // Drizzle's logger saw each call of the store that logs (`store`; `other` has no logger).
    expect(logged.filter((query) => query === readLive)).toHaveLength(6);
  });

  it('prepares a statement again when the application drops it outside a transaction', async () => {
    await using pg = await pglite();
    const { db } = pg;
    const store = createPgliteStore(db);
    const record = outcome();
    await store.commitWithRecord(async () => ({ value: 0, record }));
    expect((await store.read(record))?.operationId).toBe(record.operationId);
    await db.execute(sql`DEALLOCATE ALL`);
    expect(await prepared(db)).toHaveLength(0);
    // The missing statement is prepared again and the call answers as before.
    expect((await store.read(record))?.operationId).toBe(record.operationId);
    await db.execute(sql`DISCARD ALL`);
    expect((await store.read(record))?.operationId).toBe(record.operationId);
    expect(await prepared(db)).toHaveLength(1);
  });

  it("prepares a statement again when a table's change alters its result columns", async () => {
    await using pg = await pglite();
    const { db } = pg;
    const store = createPgliteStore(db);
    const record = outcome();
    await store.commitWithRecord(async () => ({ value: 0, record }));
    expect((await store.read(record))?.responseBody).toBe(record.response.body);
    // PostgreSQL refuses the prepared read now (0A000, cached plan must not change result type).
    await db.execute(sql`ALTER TABLE idem_records ALTER COLUMN response_body TYPE varchar`);
    expect((await store.read(record))?.responseBody).toBe(record.response.body);
    await db.execute(sql`ALTER TABLE idem_records ALTER COLUMN response_body TYPE text`);
    expect((await store.read(record))?.responseBody).toBe(record.response.body);
  });

  it('fails the statement that finds its prepared statement dropped inside a transaction, then prepares it again', async () => {
    await using pg = await pglite();
    const { db } = pg;
    const store = createPgliteStore(db);
    await store.commitWithRecord(async () => ({ value: 0, record: outcome() }));
    const record = outcome();
    const failed = await store
      .commitWithRecord(async (tx) => {
        await tx.execute(sql`DEALLOCATE ALL`);
        return { value: 0, record };
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(sqlState(failed)).toBe('26000');
    // The transaction rolled back: nothing recorded; the next use prepares again.
    expect(await store.read(record)).toBeNull();
    expect(await store.commitWithRecord(async () => ({ value: 1, record }))).toEqual({
      kind: 'recorded',
      value: 1,
    });
    expect((await store.read(record))?.operationId).toBe(record.operationId);
  });

  it('keeps a statement prepared in a transaction that rolls back (prepared statements are not transactional)', async () => {
    await using pg = await pglite();
    const { db } = pg;
    const store = createPgliteStore(db);
    const record = outcome();
    await expect(
      store.transaction(async (tx) => {
        expect(await store.read(record, tx)).toBeNull();
        throw new Rollback();
      }),
    ).rejects.toBeInstanceOf(Rollback);
    const [statement] = await prepared(db);
    expect(statement?.runs).toBe(1);
    expect(await store.read(record)).toBeNull();
    expect(await prepared(db)).toEqual([{ ...statement, runs: 2 }]);
  });

  it('runs a statement outside a transaction after an open transaction, never inside it', async () => {
    await using pg = await pglite();
    const { db } = pg;
    const store = createPgliteStore(db);
    const input = claimInput();
    let outside: Promise<unknown> | undefined;
    await expect(
      store.transaction(async (tx) => {
        expect((await store.claim(input, tx)).kind).toBe('claimed');
        // Issued while the transaction is open; PGlite's session is free between the
        // transaction's statements, so a read that took only the query lock would run here.
        outside = store.read(input);
        for (let i = 0; i < 3; i++) expect(await store.read(input, tx)).not.toBeNull();
        throw new Rollback();
      }),
    ).rejects.toBeInstanceOf(Rollback);
    // It ran after the rollback: it never saw the uncommitted claim.
    expect(await outside).toBeNull();
  });

  it('serves many reads and commits issued at once, each in its own transaction or none', async () => {
    await using pg = await pglite();
    const { db } = pg;
    await db.execute(sql`CREATE TABLE work (note text PRIMARY KEY)`);
    const store = createPgliteStore(db);
    const records = Array.from({ length: 24 }, () => outcome());
    // Every third transaction claims its key (a live row) and rolls back: a read outside it
    // that ran inside it would see the claim.
    const fails = (i: number) => i % 3 === 0;
    /** Reads issued from inside each transaction, outside it: they run after it ends. */
    const issuedInside: Promise<unknown>[] = [];
    const results = await Promise.all(
      records.flatMap((record, i) => [
        store.read(record),
        store
          .commitWithRecord(async (tx) => {
            await tx.execute(sql`INSERT INTO work (note) VALUES (${record.keyHash})`);
            if (fails(i)) {
              issuedInside[i] = store.read(record);
              const claim = await store.claim(claimInput({ ...record, owner: 'w' }), tx);
              expect(claim.kind).toBe('claimed');
              // The prepared read runs in this transaction: it sees the claim.
              expect(await store.read(record, tx)).toMatchObject({ state: 'IN_PROGRESS' });
              throw new Rollback();
            }
            expect(await store.read(record, tx)).toBeNull();
            issuedInside[i] = store.read(record);
            return { value: i, record };
          })
          .catch((error: unknown) => (error instanceof Rollback ? 'rolled back' : error)),
        store.read(record),
      ]),
    );
    for (const [i, record] of records.entries()) {
      const [before, committed, after] = results.slice(i * 3, i * 3 + 3);
      expect(committed).toEqual(fails(i) ? 'rolled back' : { kind: 'recorded', value: i });
      for (const read of [before, after]) {
        // Before or after the key's transaction, never in it (nor in another).
        if (fails(i)) expect(read).toBeNull();
        else if (read !== null) {
          expect(read).toMatchObject({ operationId: record.operationId, state: 'COMPLETED' });
        }
      }
      const inside = await issuedInside[i];
      if (fails(i)) expect(inside).toBeNull();
      else expect(inside).toMatchObject({ operationId: record.operationId, state: 'COMPLETED' });
      const now = await store.read(record);
      if (fails(i)) expect(now).toBeNull();
      else expect(now).toMatchObject({ operationId: record.operationId });
    }
    const notes = await executeRows<{ note: string }>(db, sql`SELECT note FROM work`);
    expect(notes.map((n) => n.note).sort()).toEqual(
      records
        .filter((_, i) => !fails(i))
        .map((r) => r.keyHash)
        .sort(),
    );
  });

  it('syncs the file system after a write outside a transaction and after a COMMIT, not after a read', async () => {
    // PGlite's in-memory file system, counting the syncs PGlite asks of it.
    class CountingFS extends MemoryFS {
      syncs = 0;
      override async syncToFs(relaxedDurability?: boolean) {
        this.syncs += 1;
        await super.syncToFs(relaxedDurability);
      }
    }
    const fs = new CountingFS();
    const client = new PGlite({ fs });
    await using _closed = { [Symbol.asyncDispose]: () => client.close() };
    const db = drizzle({ client });
    await migrate(db);
    const store = createPgliteStore(db);
    const record = outcome();
    const syncsOf = async (call: () => Promise<unknown>) => {
      const before = fs.syncs;
      await call();
      return fs.syncs - before;
    };

    // Each statement prepared first (a Parse syncs nothing), so only the runs are counted.
    await store.readAnswer(record);
    await store.read(record);
    await store.insertOutcome(outcome());

    expect(await syncsOf(() => store.readAnswer(record))).toBe(0);
    expect(await syncsOf(() => store.read(record))).toBe(0);
    // A write on its own is its own transaction: synced when it ran.
    expect(await syncsOf(() => store.insertOutcome(record))).toBe(1);
    expect((await store.readAnswer(record))?.operationId).toBe(record.operationId);
    // In a transaction only its COMMIT syncs (PGlite's transaction), the record's INSERT does not.
    const atCommit = outcome();
    expect(
      await syncsOf(() => store.commitWithRecord(async () => ({ value: 0, record: atCommit }))),
    ).toBe(1);
    expect((await store.read(atCommit))?.operationId).toBe(atCommit.operationId);
  });

  it('runs unprepared with preparedStatements: false', async () => {
    await using pg = await pglite();
    const { db } = pg;
    const store = createPgliteStore(db, { preparedStatements: false });
    const record = outcome();
    expect(await store.read(record)).toBeNull();
    expect(await store.commitWithRecord(async () => ({ value: 0, record }))).toEqual({
      kind: 'recorded',
      value: 0,
    });
    expect((await store.read(record))?.operationId).toBe(record.operationId);
    expect(await prepared(db)).toHaveLength(0);
  });
});
