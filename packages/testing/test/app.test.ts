import { adminUrl, createTestDatabase, postgresAvailable } from '@idem/fixtures';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { defineIdemTestApp, openIdemTestDatabase, startIdemTestApp } from '../src/index.js';
import { ordersApp, ordersPlaced } from './fixtures/ordersApp.js';

const available = await postgresAvailable();
const order = { sku: 'sku-1', quantity: 2 };

describe.each([
  ['PGlite', async () => ({ options: {}, [Symbol.asyncDispose]: async () => {} })],
  [
    'PostgreSQL',
    async () => {
      const database = await createTestDatabase('idem_testing');
      return {
        options: { databaseUrl: database.url, freshDatabase: false },
        [Symbol.asyncDispose]: () => database.drop(),
      };
    },
  ],
] as const)('the app on %s', (name, where) => {
  it.skipIf(name === 'PostgreSQL' && !available)(
    'serves the router over HTTP on two servers with idem headers and the caller',
    async () => {
      await using place = await where();
      await using run = await startIdemTestApp(ordersApp(), place.options);
      expect(run.database.kind).toBe(name === 'PGlite' ? 'pglite' : 'postgres');
      const [a, b] = run.servers;
      const first = await a!.request('orders.create', order, { key: 'k-1', caller: 'alice' });
      expect(first.status).toBe(200);
      expect(first.replayed).toBe(false);
      const again = await b!.request('orders.create', order, { key: 'k-1', caller: 'alice' });
      expect(again).toMatchObject({ status: 200, replayed: true, text: first.text, server: 1 });
      const reused = await b!.request(
        'orders.create',
        { ...order, quantity: 3 },
        { key: 'k-1', caller: 'alice' },
      );
      expect(reused).toMatchObject({ status: 422, reason: 'IDEMPOTENCY_KEY_REUSED' });
      const anonymous = await a!.request('orders.create', order, { key: 'k-2' });
      expect(anonymous.status).toBe(401);
      expect(await ordersPlaced(run.database.db)).toBe(1);
    },
  );
});

describe.skipIf(!available)('a database by URL', () => {
  it('is a fresh one on that server, migrated, and dropped on close', async () => {
    const database = await openIdemTestDatabase({ databaseUrl: adminUrl() });
    const name = new URL(database.url!).pathname.slice(1);
    expect(name).toMatch(/^idem_test_\d+_[0-9a-f]{8}$/);
    const { sql } = await import('drizzle-orm');
    expect(await database.count(sql`select 1 from idem_records`)).toBe(0);
    await database.close();
    const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
    try {
      const rows = await admin`select 1 from pg_database where datname = ${name}`;
      expect(rows).toHaveLength(0);
    } finally {
      await admin.end({ timeout: 2 });
    }
  });
});

describe('the app definition', () => {
  it('refuses a definition without a factory, naming the shape it needs', () => {
    expect(() => defineIdemTestApp({} as never)).toThrow(/needs a factory/);
  });

  it('refuses a factory that returns no createContext', async () => {
    await using database = await openIdemTestDatabase();
    const app = defineIdemTestApp(() => ({ router: {} }) as never);
    await expect(startIdemTestApp(app, { database, servers: 1 })).rejects.toThrow(
      /must return \{ router, createContext \}/,
    );
  });

  it('refuses zero servers', async () => {
    await expect(startIdemTestApp(ordersApp(), { servers: 0 })).rejects.toThrow(/at least 1/);
  });
});
