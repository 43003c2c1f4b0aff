import { randomUUID } from 'node:crypto';
import { storeContractCases } from '@idem/fixtures';
import { sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  claimedRecord,
  claimInput,
  conformanceHelpers,
  outcomeRecord,
  Rollback,
  UNSORTED_UNICODE_BODY,
  contractTarget,
  type ConformanceTarget,
} from '../conformanceTarget.js';

/** The scope whose records a trigger refuses: a record statement that fails for its own reason. */
const REFUSED_SCOPE = 'acct_refused:commit';

/**
 * The key taken at commit (`commitWithRecord`, `insertOutcome`): the record is the work's
 * transaction's last statement (sent with COMMIT on postgres.js), and whenever it fails, the
 * work's writes must not commit: the store contract's commit cases, and the cases whose work
 * writes a table of its own (or whose record a trigger refuses).
 */
export function commitCases<TTx>(target: () => ConformanceTarget<TTx>): void {
  const { store, rowsOfKey } = conformanceHelpers(target);
  /** The work's own table: what the handler would write through `ctx.idem.tx`. */
  const work = (tx: TTx, note: string) =>
    target().rows(sql`INSERT INTO conf_commit_work (note) VALUES (${note})`, tx);
  const workRows = async (note: string) =>
    (
      await target().rows<{ n: number }>(
        sql`SELECT count(*)::int AS n FROM conf_commit_work WHERE note = ${note}`,
      )
    )[0]!.n;
  const outcome = outcomeRecord;

  storeContractCases(() => contractTarget(target()), { groups: ['commit'] });

  describe('the key taken at commit', () => {
    beforeAll(async () => {
      await target().rows(sql`CREATE TABLE IF NOT EXISTS conf_commit_work (
        id serial PRIMARY KEY, note text NOT NULL UNIQUE)`);
      await target().rows(sql`CREATE OR REPLACE FUNCTION conf_refuse_record() RETURNS trigger
        LANGUAGE plpgsql AS $$ BEGIN
          RAISE EXCEPTION 'refused by the test' USING ERRCODE = 'P0001';
        END $$`);
      await target().rows(sql`DROP TRIGGER IF EXISTS conf_refuse_record ON idem_records`);
      await target().rows(
        sql.raw(`CREATE TRIGGER conf_refuse_record BEFORE INSERT ON idem_records
        FOR EACH ROW WHEN (NEW.scope = '${REFUSED_SCOPE}') EXECUTE FUNCTION conf_refuse_record()`),
      );
    });

    it('records a fresh key with the work: both committed, the row as a replay reads it', async () => {
      const record = outcome();
      const note = randomUUID();
      const result = await store().commitWithRecord(async (tx) => {
        await work(tx, note);
        return { value: 'done', record };
      });
      expect(result).toEqual({ kind: 'recorded', value: 'done' });
      expect(await workRows(note)).toBe(1);
      expect(await store().read(record)).toMatchObject({
        state: 'COMPLETED',
        version: 1,
        attempts: 1,
        operationId: record.operationId,
        fingerprint: 'fingerprint-a',
        responseStatus: 200,
        responseBody: UNSORTED_UNICODE_BODY,
        leaseOwner: null,
        leaseExpiresAt: null,
        replayExpired: false,
      });
    });

    it('a key with a live row is taken: the work rolls back, the row stays as it was', async () => {
      const record = outcome();
      const first = await store().commitWithRecord(async () => ({ value: 1, record }));
      expect(first.kind).toBe('recorded');
      const note = randomUUID();
      const second = await store().commitWithRecord(async (tx) => {
        await work(tx, note);
        return { value: 2, record: { ...record, operationId: randomUUID() } };
      });
      expect(second).toEqual({ kind: 'taken' });
      expect(await workRows(note)).toBe(0);
      expect((await store().read(record))!.operationId).toBe(record.operationId);
      expect(await rowsOfKey(record.keyHash)).toHaveLength(1);
    });

    it('a claim-first row in progress takes the key too', async () => {
      const input = claimInput({ scope: 'acct_1:commit' });
      claimedRecord(await store().claim(input));
      const note = randomUUID();
      const result = await store().commitWithRecord(async (tx) => {
        await work(tx, note);
        return { value: 0, record: outcome({ keyHash: input.keyHash }) };
      });
      expect(result).toEqual({ kind: 'taken' });
      expect(await workRows(note)).toBe(0);
    });

    it('a record refused for any other reason fails the transaction: nothing of the work commits', async () => {
      const note = randomUUID();
      const record = outcome({ scope: REFUSED_SCOPE });
      await expect(
        store().commitWithRecord(async (tx) => {
          await work(tx, note);
          return { value: 0, record };
        }),
      ).rejects.toSatisfy((error) => /refused by the test/.test(messages(error)));
      expect(await workRows(note)).toBe(0);
      expect(await store().read(record)).toBeNull();
    });

    it("the work's own errors are the work's, a unique violation included: rethrown, nothing recorded", async () => {
      const note = randomUUID();
      await store().commitWithRecord(async (tx) => {
        await work(tx, note);
        return { value: 0, record: outcome() };
      });
      const record = outcome();
      await expect(
        store().commitWithRecord(async (tx) => {
          await work(tx, note); // conf_commit_work.note is UNIQUE: 23505, not the key's
          return { value: 0, record };
        }),
      ).rejects.toThrow();
      await expect(
        store().commitWithRecord(async () => {
          throw new Rollback();
        }),
      ).rejects.toBeInstanceOf(Rollback);
      expect(await store().read(record)).toBeNull();
    });
  });
}

/** The messages of an error and the errors it wraps (Drizzle wraps the driver's as `cause`). */
function messages(error: unknown): string {
  const all: string[] = [];
  for (let e = error; e instanceof Error; e = e.cause) all.push(e.message);
  return all.join(' <- ');
}
