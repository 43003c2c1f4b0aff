import { createTestDatabase, postgresAvailable } from '@idem/fixtures';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { createPostgresJsStore, migrate } from '../src/postgres-js/index.js';

const available = await postgresAvailable();

describe.skipIf(!available)('prepared statements (postgres.js)', () => {
  it.each([true, false])(
    'claims, completes and replays the same with preparedStatements: %s',
    async (prepared) => {
      await using database = await createTestDatabase('idem_prepared');
      // One connection, so this session's prepared statements are the ones the test sees.
      const client = postgres(database.url, { max: 1, onnotice: () => {} });
      try {
        const db = drizzle(client);
        await migrate(db);
        const store = createPostgresJsStore(db, { preparedStatements: prepared });
        const preparedCount = async () =>
          (await client`select count(*)::int as n from pg_prepared_statements`)[0]!.n as number;
        const before = await preparedCount();
        const input = {
          scope: 's',
          procedure: 'p',
          keyHash: 'k',
          fingerprint: 'f',
          fingerprintVersion: 1,
          leaseMs: 30_000,
          owner: 'o',
        };
        const claim = await store.claim({ ...input, lockTimeoutMs: 500 });
        expect(claim.kind).toBe('claimed');
        if (claim.kind !== 'claimed') return;
        const window = { replayWindowMs: 60_000, retentionMs: 120_000 };
        const body = '{"b":1,"a":2}';
        expect(
          await store.complete(
            { id: claim.record.id, version: 1 },
            { status: 200, body, ...window },
          ),
        ).toBe(true);
        for (let i = 0; i < 3; i++) {
          expect(await store.claim(input)).toMatchObject({
            kind: 'existing',
            record: { state: 'COMPLETED', responseBody: body },
          });
        }
        const added = (await preparedCount()) - before;
        if (prepared) expect(added).toBeGreaterThan(0);
        else expect(added).toBe(0);
      } finally {
        await client.end({ timeout: 1 });
      }
    },
  );
});
