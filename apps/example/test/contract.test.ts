/**
 * docs/contract.md, checked against the example server on PostgreSQL: the statuses, reasons,
 * headers and bodies it documents, and its two retry loops (the shell one, extracted from the
 * page and run with bash and curl; the TypeScript one, from docs-samples/) through a server that
 * drops every fresh response after committing it.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '@idem/fixtures';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallFailed, callIdempotent } from '../docs-samples/contract/callIdempotent.js';
import { tokenFor } from '../src/createContext.js';
import { exampleClient } from './fixtures/exampleClient.js';
import { startExampleServer, type ExampleServer } from './fixtures/exampleServer.js';
import { httpPost as rawPost } from '@idem/fixtures';

const available = await postgresAvailable();
const contract = readFileSync(new URL('../../../docs/contract.md', import.meta.url), 'utf8');

/** The ```sh block of docs/contract.md that contains `marker`. */
function shellSample(marker: string): string {
  const blocks = [...contract.matchAll(/^```sh\n([\s\S]*?)^```/gm)].map((m) => m[1]!);
  const found = blocks.filter((block) => block.includes(marker));
  expect(found, `one sh block of docs/contract.md contains ${marker}`).toHaveLength(1);
  return found[0]!;
}

let accounts = 0;
const newAccount = () => `acct_contract${process.pid}x${++accounts}`;

describe.skipIf(!available)('docs/contract.md against the example server (PostgreSQL)', () => {
  let database: TestDatabase;
  let plain: ExampleServer;
  let dropping: ExampleServer;

  beforeAll(async () => {
    database = await createTestDatabase('idem_example_contract');
    // A slow processor, so that a duplicate arrives while the first payment still runs.
    plain = await startExampleServer({
      DATABASE_URL: database.url,
      IDEM_EXAMPLE_PROCESSOR_LATENCY_MS: '1000',
    });
    dropping = await startExampleServer({
      DATABASE_URL: database.url,
      IDEM_EXAMPLE_DROP_RATE: '1',
    });
  });
  afterAll(async () => {
    await plain?.process.stop();
    await dropping?.process.stop();
    await database?.drop();
  });

  const post = (
    server: ExampleServer,
    path: string,
    input: unknown,
    headers: Record<string, string | string[]>,
  ) => rawPost(`${server.url}/${path}`, JSON.stringify(input), headers);

  describe('the documented answers', () => {
    const order = { sku: 'tea-sencha', quantity: 2 };

    it('a success, then its replay: same status and body, Idempotent-Replayed: true', async () => {
      const auth = {
        authorization: `Bearer ${tokenFor(newAccount())}`,
        'idempotency-key': 'order-cart-1001',
      };
      const first = await post(plain, 'orders.create', order, auth);
      expect(first.status).toBe(200);
      expect(first.json).toEqual({ result: { data: expect.objectContaining(order) } });
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      // Key order, whitespace and fields the procedure ignores do not make a different input.
      const again = await rawPost(
        `${plain.url}/orders.create`,
        '{ "quantity": 2, "sku": "tea-sencha", "colour": "green" }',
        auth,
      );
      expect(again.status).toBe(200);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.text).toBe(first.text);
    });

    it('the same key from another account is another key', async () => {
      const key = { 'idempotency-key': 'order-cart-shared' };
      const a = await post(plain, 'orders.create', order, {
        ...key,
        authorization: `Bearer ${tokenFor(newAccount())}`,
      });
      const b = await post(plain, 'orders.create', order, {
        ...key,
        authorization: `Bearer ${tokenFor(newAccount())}`,
      });
      expect(b.headers['idempotent-replayed']).toBeUndefined();
      expect(b.json.result.data.id).not.toBe(a.json.result.data.id);
    });

    it.each([
      ['no key', {}, 'IDEMPOTENCY_KEY_MISSING'],
      ['a key with a space', { 'idempotency-key': 'order cart' }, 'IDEMPOTENCY_KEY_INVALID'],
      ['256 characters', { 'idempotency-key': 'k'.repeat(256) }, 'IDEMPOTENCY_KEY_INVALID'],
      ['two Idempotency-Key headers', { 'idempotency-key': ['a', 'b'] }, 'IDEMPOTENCY_KEY_INVALID'],
    ])('400 for %s', async (_name, headers, reason) => {
      const answer = await post(plain, 'orders.create', order, {
        authorization: `Bearer ${tokenFor(newAccount())}`,
        ...headers,
      });
      expect(answer.status).toBe(400);
      expect(answer.json.error.data).toMatchObject({
        code: 'BAD_REQUEST',
        httpStatus: 400,
        idem: { reason },
      });
    });

    it('401 without a demo token', async () => {
      const answer = await post(plain, 'orders.create', order, {
        authorization: 'Bearer alice',
        'idempotency-key': 'k1',
      });
      expect(answer.status).toBe(401);
      expect(answer.json.error.data).toMatchObject({ code: 'UNAUTHORIZED', httpStatus: 401 });
    });

    it('422 IDEMPOTENCY_KEY_REUSED for the same key with another input; the first outcome stands', async () => {
      const auth = {
        authorization: `Bearer ${tokenFor(newAccount())}`,
        'idempotency-key': 'order-cart-7',
      };
      const first = await post(plain, 'orders.create', order, auth);
      const reused = await post(plain, 'orders.create', { ...order, quantity: 3 }, auth);
      expect(reused.status).toBe(422);
      expect(reused.json.error.data).toMatchObject({
        code: 'UNPROCESSABLE_CONTENT',
        httpStatus: 422,
        idem: { reason: 'IDEMPOTENCY_KEY_REUSED', operationId: expect.any(String) },
      });
      expect((await post(plain, 'orders.create', order, auth)).text).toBe(first.text);
    });

    it('409 IDEMPOTENCY_REQUEST_IN_PROGRESS with Retry-After: 1 while the first request runs', async () => {
      const account = newAccount();
      const client = exampleClient(plain.url, account);
      const created = await client.orders.create.mutate(order);
      const auth = {
        authorization: `Bearer ${tokenFor(account)}`,
        'idempotency-key': `payment-${created.id}`,
      };
      const payment = { orderId: created.id, amountCents: 1250, currency: 'EUR' };
      // Two requests with one key, 300 ms apart; the processor takes 1 s. Whichever claimed the
      // key runs the payment; the other is told to wait.
      const answers = await Promise.all([
        post(plain, 'payments.create', payment, auth),
        new Promise((resolve) => setTimeout(resolve, 300)).then(() =>
          post(plain, 'payments.create', payment, auth),
        ),
      ]);
      expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
      const duplicate = answers.find((a) => a.status === 409)!;
      expect(duplicate.headers['retry-after']).toBe('1');
      expect(duplicate.json.error.data).toMatchObject({
        code: 'CONFLICT',
        httpStatus: 409,
        idem: { reason: 'IDEMPOTENCY_REQUEST_IN_PROGRESS', retryAfterMs: 1000 },
      });
      expect(await client.processor.stats.query()).toMatchObject({ charges: 1, chargeCalls: 1 });
    });

    it('a deterministic failure (404 unknown order) is stored and replayed', async () => {
      const auth = {
        authorization: `Bearer ${tokenFor(newAccount())}`,
        'idempotency-key': 'payment-nope',
      };
      const payment = { orderId: 'ord_nope', amountCents: 1250, currency: 'EUR' };
      const first = await post(plain, 'payments.create', payment, auth);
      expect(first.status).toBe(404);
      expect(first.json.error.data).toMatchObject({ code: 'NOT_FOUND', httpStatus: 404 });
      const again = await post(plain, 'payments.create', payment, auth);
      expect(again.status).toBe(404);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.text).toBe(first.text);
    });
  });

  describe('the retry loops, through a server that drops every fresh response', () => {
    const bash = promisify(execFile);
    const run = (script: string, env: Record<string, string>) =>
      bash('bash', ['-c', script], { env: { ...process.env, ...env }, timeout: 60_000 });

    it('the shell loop retries the dropped response with the same key and gets the replay', async () => {
      const account = newAccount();
      const script = `${shellSample('idem_call() {')}\n${shellSample('idem_call orders.create')}`;
      const { stdout } = await run(script, {
        API: dropping.url,
        TOKEN: tokenFor(account),
        CART_ID: '1001',
      });
      expect(JSON.parse(stdout)).toEqual({
        result: { data: expect.objectContaining({ sku: 'tea-sencha', quantity: 2 }) },
      });
      expect(await exampleClient(dropping.url, account).orders.list.query()).toHaveLength(1);
    });

    it('the shell loop does not retry a 422', async () => {
      const account = newAccount();
      const define = shellSample('idem_call() {');
      await run(`${define}\nidem_call orders.create '{"sku":"tea","quantity":1}' k-422`, {
        API: plain.url,
        TOKEN: tokenFor(account),
      });
      await expect(
        run(`${define}\nidem_call orders.create '{"sku":"tea","quantity":2}' k-422`, {
          API: plain.url,
          TOKEN: tokenFor(account),
        }),
      ).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('attempt 1 (HTTP 422)') });
    });

    it('the TypeScript loop pays once through dropped responses', async () => {
      const account = newAccount();
      const order = await callIdempotent<{ id: string }>(
        dropping.url,
        tokenFor(account),
        'orders.create',
        { sku: 'tea-sencha', quantity: 2 },
        'order-cart-2002',
      );
      expect(order.replayed).toBe(true);
      const payment = { orderId: order.data.id, amountCents: 1250, currency: 'EUR' };
      const paid = await callIdempotent<{ status: string }>(
        dropping.url,
        tokenFor(account),
        'payments.create',
        payment,
        `payment-${order.data.id}`,
      );
      expect(paid).toMatchObject({ replayed: true, data: { status: 'paid' } });
      const client = exampleClient(dropping.url, account);
      expect(await client.processor.stats.query()).toEqual({
        charges: 1,
        chargeCalls: 1,
        lookupCalls: 0,
      });
      expect(await client.orders.list.query()).toHaveLength(1);
    });

    it('the TypeScript loop stops at once on a 422', async () => {
      const account = newAccount();
      await callIdempotent(
        plain.url,
        tokenFor(account),
        'orders.create',
        { sku: 'tea', quantity: 1 },
        'k-422',
      );
      const failed = callIdempotent(
        plain.url,
        tokenFor(account),
        'orders.create',
        { sku: 'tea', quantity: 2 },
        'k-422',
      );
      await expect(failed).rejects.toBeInstanceOf(CallFailed);
      await expect(failed).rejects.toMatchObject({ status: 422, attempts: 1 });
    });
  });
});
