/**
 * What the example refuses, as a raw-HTTP caller meets it, on a server process on PostgreSQL:
 * NUL in an input, a body over the limit, a batch holding a keyed mutation, two Authorization
 * headers, an account id instead of a token. Each is a clean 4xx and leaves nothing stored: no
 * idem record in the caller's scope and no order or payment. And an internal error reaches the
 * caller masked, with an error id that leads to the detail in the server log.
 */
import { request } from 'node:http';
import { createTestDatabase, httpPost, postgresAvailable, type TestDatabase } from '@idem/fixtures';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenFor } from '../src/createContext.js';
import { startExampleServer, type ExampleServer } from './fixtures/exampleServer.js';

const available = await postgresAvailable();

let accounts = 0;
const newAccount = () => `acct_limits${process.pid}x${++accounts}`;
const order = { sku: 'tea-sencha', quantity: 2 };

describe.skipIf(!available)('the example refuses cleanly and stores nothing (PostgreSQL)', () => {
  let database: TestDatabase;
  let server: ExampleServer;
  let sql: postgres.Sql;

  beforeAll(async () => {
    database = await createTestDatabase('idem_example_limits');
    server = await startExampleServer({ DATABASE_URL: database.url });
    sql = postgres(database.url, { max: 2, onnotice: () => {} });
  });
  afterAll(async () => {
    await sql?.end({ timeout: 1 });
    await server?.process.stop();
    await database?.drop();
  });

  /** Rows anywhere that belong to `account`: idem records in its scope, orders, payments. */
  const storedFor = async (account: string) => {
    const [row] = await sql<{ records: number; orders: number; payments: number }[]>`
      select (select count(*)::int from idem_records where scope = ${account}) as records,
             (select count(*)::int from orders where account_id = ${account}) as orders,
             (select count(*)::int from payments where account_id = ${account}) as payments`;
    return row;
  };
  const nothing = { records: 0, orders: 0, payments: 0 };
  const post = (path: string, body: string, headers: Record<string, string | string[]>) =>
    httpPost(`${server.url}/${path}`, body, headers);

  it.each([
    ['orders.create', { sku: 'tea\u0000', quantity: 2 }, '$.sku'],
    ['payments.create', { orderId: 'ord_\u0000x', amountCents: 100, currency: 'EUR' }, '$.orderId'],
  ])('NUL in the input of %s: 400 IDEMPOTENCY_INPUT_UNSTORABLE', async (path, input, at) => {
    const account = newAccount();
    const answer = await post(path, JSON.stringify(input), {
      authorization: `Bearer ${tokenFor(account)}`,
      'idempotency-key': 'k-nul',
    });
    expect(answer.status).toBe(400);
    expect(answer.json.error.data).toMatchObject({
      code: 'BAD_REQUEST',
      idem: { reason: 'IDEMPOTENCY_INPUT_UNSTORABLE' },
    });
    expect(answer.json.error.message).toContain(at);
    expect(await storedFor(account)).toEqual(nothing);
  });

  it('a 2 MiB body: 413, refused while it streams in (before the body ends)', async () => {
    const account = newAccount();
    // A valid JSON input padded to 2 MiB, sent in 64 KiB chunks. The request is not ended until
    // the answer arrives: a server that buffered the body first could never answer.
    const body = Buffer.from(
      JSON.stringify({ ...order, padding: 'x'.repeat(2 * 1024 * 1024) }),
      'utf8',
    );
    const { status, text, written } = await new Promise<{
      status: number;
      text: string;
      written: number;
    }>((resolve, reject) => {
      const req = request(`${server.url}/orders.create`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'transfer-encoding': 'chunked',
          authorization: `Bearer ${tokenFor(account)}`,
          'idempotency-key': 'k-big',
        },
      });
      let written = 0;
      let answered = false;
      req.on('response', (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString(), written });
          req.destroy();
        });
      });
      req.on('error', (error) => {
        if (!answered) reject(error);
      });
      const writeMore = () => {
        while (!answered && written < body.length) {
          const chunk = body.subarray(written, written + 65_536);
          written += chunk.length;
          if (!req.write(chunk)) return void req.once('drain', writeMore);
        }
        // Everything but the end of the body is written; wait for the answer, never end it.
      };
      writeMore();
    });
    expect(status).toBe(413);
    expect(JSON.parse(text).error.data).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect(written).toBeGreaterThan(1024 * 1024);
    expect(await storedFor(account)).toEqual(nothing);
    // The server is still there and serves a normal request.
    const fine = await post('orders.create', JSON.stringify(order), {
      authorization: `Bearer ${tokenFor(account)}`,
      'idempotency-key': 'k-after-big',
    });
    expect(fine.status).toBe(200);
  });

  it('a batch holding a keyed mutation: 400 IDEMPOTENCY_BATCH_REFUSED for every item, none runs', async () => {
    const account = newAccount();
    const answer = await post(
      'orders.create,orders.create?batch=1',
      JSON.stringify({ 0: order, 1: order }),
      { authorization: `Bearer ${tokenFor(account)}`, 'idempotency-key': 'k-batch' },
    );
    expect(answer.status).toBe(400);
    expect(answer.headers['idempotent-replayed']).toBeUndefined();
    expect(answer.json).toHaveLength(2);
    for (const item of answer.json) {
      expect(item.error.data.idem.reason).toBe('IDEMPOTENCY_BATCH_REFUSED');
    }
    expect(await storedFor(account)).toEqual(nothing);
  });

  it('two Authorization headers: 400, like two Idempotency-Key headers', async () => {
    const account = newAccount();
    const answer = await post('orders.create', JSON.stringify(order), {
      authorization: [`Bearer ${tokenFor(account)}`, `Bearer ${tokenFor(newAccount())}`],
      'idempotency-key': 'k-two-auth',
    });
    expect(answer.status).toBe(400);
    expect(answer.json.error.data).toMatchObject({ code: 'BAD_REQUEST', httpStatus: 400 });
    expect(await storedFor(account)).toEqual(nothing);
  });

  it('the account id is not a credential: 401 for it, or for a token signed for another account', async () => {
    const account = newAccount();
    const forged = `${account}.${tokenFor(newAccount()).split('.')[1]}`;
    for (const token of [account, forged]) {
      const answer = await post('orders.create', JSON.stringify(order), {
        authorization: `Bearer ${token}`,
        'idempotency-key': 'k-forged',
      });
      expect(answer.status).toBe(401);
    }
    expect(await storedFor(account)).toEqual(nothing);
  });

  it('an internal error is masked: a generic message with an error id, the detail in the log', async () => {
    const account = newAccount();
    const auth = { authorization: `Bearer ${tokenFor(account)}` };
    expect(
      (await post('orders.create', JSON.stringify(order), { ...auth, 'idempotency-key': 'k-1' }))
        .status,
    ).toBe(200);
    // Break the app's table under the running server: its next query fails inside the driver,
    // whose error quotes the statement and its parameters.
    await sql`alter table orders rename to orders_gone`;
    try {
      const res = await fetch(`${server.url}/orders.list`, { headers: auth });
      expect(res.status).toBe(500);
      const text = await res.text();
      expect(text).not.toMatch(/select|orders_gone|"orders"|Failed query|params/i);
      const message: string = JSON.parse(text).error.message;
      const errorId = /^Internal server error; error id (err_[0-9a-f]{16})$/.exec(message)?.[1];
      expect(errorId, message).toBeDefined();
      await expect
        .poll(() => server.records.find((r) => r.msg === 'request.error' && r.errorId === errorId))
        .toMatchObject({
          path: 'orders.list',
          causes: expect.arrayContaining([{ name: 'PostgresError', code: '42P01' }]),
        });
      const logged = JSON.stringify(server.records);
      expect(logged).not.toContain('Failed query');
    } finally {
      await sql`alter table orders_gone rename to orders`;
    }
  });
});
