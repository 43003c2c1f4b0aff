/**
 * The store behind PgBouncer 1.18 in transaction mode (a private PgBouncer started here, in front
 * of the server IDEM_TEST_ADMIN_URL names): the start-up probe tells a pooler from a direct
 * connection, and a store that prepares anyway falls back after the first missing prepared
 * statement, once, with a warning.
 */
import {
  createTestDatabase,
  pgBouncerAvailable,
  postgresAvailable,
  startPgBouncer,
  type PgBouncer,
} from '@idem/fixtures';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createPostgresJsStore,
  detectTransactionPooler,
  migrate,
} from '../src/postgres-js/index.js';

const available = (await postgresAvailable()) && pgBouncerAvailable();

describe.skipIf(!available)('behind PgBouncer in transaction mode', () => {
  let bouncer: PgBouncer;
  beforeAll(async () => {
    bouncer = await startPgBouncer();
  });
  afterAll(async () => {
    await bouncer?.stop();
  });

  it('the probe finds the pooler, and finds none on a direct connection', async () => {
    await using database = await createTestDatabase('idem_pooler_probe');
    // The pooler forwards to the server the test database was created on, wherever it is.
    const port = async (url: string) => {
      const sql = postgres(url, { max: 1, prepare: false, onnotice: () => {} });
      try {
        const [row] = await sql<{ port: number }[]>`select inet_server_port() as port`;
        return row?.port;
      } finally {
        await sql.end({ timeout: 1 });
      }
    };
    expect(await port(bouncer.through(database.url))).toBe(await port(database.url));
    expect(await detectTransactionPooler(database.url)).toBe(false);
    expect(await detectTransactionPooler(bouncer.through(database.url))).toBe(true);
  });

  it('a store that prepares meets a missing statement once, warns once, then works unprepared', async () => {
    await using database = await createTestDatabase('idem_pooler_fallback');
    const setup = postgres(database.url, { max: 1, onnotice: () => {} });
    await migrate(drizzle(setup));
    await setup.end();

    // One client connection, so its prepared statements stay in its cache; another client holds
    // the server connection it prepared them on, so its next transaction gets another one.
    const client = postgres(bouncer.through(database.url), { max: 1, onnotice: () => {} });
    const holder = postgres(bouncer.through(database.url), { max: 1, onnotice: () => {} });
    const warnings: string[] = [];
    // The start-up check would refuse this client: skipped, as where it cannot see the pooler.
    const store = createPostgresJsStore(drizzle(client), {
      poolerProbe: false,
      preparedStatements: true,
      onWarning: (message) => warnings.push(message),
    });
    try {
      const claimIn = (key: string) =>
        store.transaction((tx) =>
          store.claim(
            {
              scope: 's',
              procedure: 'p',
              keyHash: key,
              fingerprint: 'f',
              fingerprintVersion: 1,
              leaseMs: 30_000,
              owner: 'o',
              lockTimeoutMs: 500,
            },
            tx,
          ),
        );
      expect(await claimIn('k1')).toMatchObject({ kind: 'claimed' });

      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let holding!: () => void;
      const held = new Promise<void>((resolve) => (holding = resolve));
      const hold = holder.begin(async (tx) => {
        await tx`select 1`;
        holding();
        await released;
      });
      await held;
      await expect(claimIn('k2')).rejects.toThrow();
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/pooler in transaction mode.*prepare: false/s);

      for (const key of ['k2', 'k3', 'k4']) {
        expect(await claimIn(key)).toMatchObject({ kind: 'claimed' });
      }
      release();
      await hold;
      for (const key of ['k5', 'k6']) {
        expect(await claimIn(key)).toMatchObject({ kind: 'claimed' });
      }
      expect(warnings).toHaveLength(1);
      const [row] = await client<{ n: number }[]>`select count(*)::int as n from idem_records`;
      expect(row?.n).toBe(6);
    } finally {
      await client.end({ timeout: 1 });
      await holder.end({ timeout: 1 });
    }
  });
});
