/**
 * The example behind PgBouncer 1.18 in transaction mode (a private PgBouncer started here, in
 * front of the server IDEM_TEST_ADMIN_URL names): with IDEM_EXAMPLE_DATABASE_POOLER=transaction
 * it serves a burst of keyed and identical requests with no store error and one execution per
 * key; with `none` it refuses to start and names the fix; an unknown value is refused by
 * readConfig. On both drivers (IDEM_EXAMPLE_DATABASE_DRIVER=postgres-js and pg), and on pg with the
 * probe too (`auto`). (The contract and crash suites run through PgBouncer with the default, `auto`, in
 * the `pgbouncer` project of vitest.config.ts.)
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { withIdempotencyKey } from '@idem/client';
import {
  createTestDatabase,
  pgBouncerAvailable,
  postgresAvailable,
  startPgBouncer,
  type PgBouncer,
} from '@idem/fixtures';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASE_DRIVERS, readConfig, type DatabaseDriver } from '../src/readConfig.js';
import { exampleClient } from './fixtures/exampleClient.js';
import { startExampleServer } from './fixtures/exampleServer.js';

const available = (await postgresAvailable()) && pgBouncerAvailable();
const APP_DIR = fileURLToPath(new URL('..', import.meta.url));

it('IDEM_EXAMPLE_DATABASE_POOLER takes auto, none or transaction, and nothing else', () => {
  expect(readConfig({})).toMatchObject({
    databasePooler: 'auto',
    databaseConnectTimeoutMs: 1_000,
    databaseStatementTimeoutMs: 5_000,
  });
  expect(readConfig({ IDEM_EXAMPLE_DATABASE_POOLER: 'transaction' }).databasePooler).toBe(
    'transaction',
  );
  expect(() => readConfig({ IDEM_EXAMPLE_DATABASE_POOLER: 'session' })).toThrow(
    /IDEM_EXAMPLE_DATABASE_POOLER must be one of auto, none, transaction; got session/,
  );
  expect(() => readConfig({ IDEM_EXAMPLE_DATABASE_CONNECT_TIMEOUT_MS: '0' })).toThrow(
    /IDEM_EXAMPLE_DATABASE_CONNECT_TIMEOUT_MS/,
  );
});

it('IDEM_EXAMPLE_DATABASE_DRIVER takes postgres-js or pg, and nothing else', () => {
  expect(readConfig({}).databaseDriver).toBe('postgres-js');
  expect(readConfig({ IDEM_EXAMPLE_DATABASE_DRIVER: 'pg' }).databaseDriver).toBe('pg');
  expect(readConfig({ IDEM_EXAMPLE_DATABASE_DRIVER: 'postgres-js' }).databaseDriver).toBe(
    'postgres-js',
  );
  expect(() => readConfig({ IDEM_EXAMPLE_DATABASE_DRIVER: 'node-postgres' })).toThrow(
    /IDEM_EXAMPLE_DATABASE_DRIVER must be one of postgres-js, pg; got node-postgres/,
  );
});

/** Each driver with the pooler said out loud, and pg with it found by the probe too. */
const SETUPS: [DatabaseDriver, 'transaction' | 'auto'][] = [
  ...DATABASE_DRIVERS.map((driver) => [driver, 'transaction'] as [DatabaseDriver, 'transaction']),
  ['pg', 'auto'],
];

describe.skipIf(!available)('the example behind PgBouncer in transaction mode', () => {
  let bouncer: PgBouncer;
  beforeAll(async () => {
    bouncer = await startPgBouncer();
  });
  afterAll(async () => {
    await bouncer?.stop();
  });

  it.each(SETUPS)(
    'serves 100 keyed orders and 20 identical ones: no store error, one order per key (%s, pooler %s)',
    async (driver, pooler) => {
      await using database = await createTestDatabase('idem_example_pooler');
      // Through the pooler, with the setting said out loud (the probe is not needed), or found.
      await using server = await startExampleServer({
        DATABASE_URL: bouncer.through(database.url),
        IDEM_EXAMPLE_DATABASE_DRIVER: driver,
        IDEM_EXAMPLE_DATABASE_POOLER: pooler,
      });
      expect(server.records.find((r) => r.msg === 'database.driver')?.driver).toBe(driver);
      if (pooler === 'auto') {
        expect(server.records.some((r) => r.msg === 'database.pooler')).toBe(true);
      }
      const client = exampleClient(server.url, 'acct_pooler', { maxAttempts: 10 });
      const order = { sku: 'tea-sencha', quantity: 1 };
      const distinct = Array.from({ length: 100 }, (_, i) =>
        client.orders.create.mutate(order, withIdempotencyKey(`order-${i}`)),
      );
      const identical = Array.from({ length: 20 }, () =>
        client.orders.create.mutate(order, withIdempotencyKey('order-same')),
      );
      const made = await Promise.all([...distinct, ...identical]);
      expect(new Set(made.map((o) => o.id)).size).toBe(101);
      expect(await client.orders.list.query()).toHaveLength(101);
      expect(server.records.filter((r) => r.msg === 'idem.store-error')).toEqual([]);
      expect(server.records.filter((r) => r.msg === 'store.warning')).toEqual([]);
    },
  );

  it.each(DATABASE_DRIVERS)(
    'IDEM_EXAMPLE_DATABASE_POOLER=none behind it: a start-up error that names the fix (%s)',
    async (driver) => {
      await using database = await createTestDatabase('idem_example_pooler_none');
      const child = spawn(
        process.execPath,
        ['--conditions=@idem/source', '--import', 'tsx', 'src/serve.ts'],
        {
          cwd: APP_DIR,
          env: {
            ...process.env,
            PORT: '0',
            DATABASE_URL: bouncer.through(database.url),
            IDEM_EXAMPLE_DATABASE_DRIVER: driver,
            IDEM_EXAMPLE_DATABASE_POOLER: 'none',
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(code).not.toBe(0);
      expect(output).not.toContain('listening on');
      expect(output).toContain('transaction-mode pooler');
      expect(output).toContain('Set IDEM_EXAMPLE_DATABASE_POOLER=transaction');
    },
  );
});
