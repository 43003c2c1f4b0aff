import type { AddressInfo } from 'node:net';
import { createHash, randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestEnv } from './fixtures/databases.js';
import { httpPost } from '@idem/fixtures';
import { createHTTPServer } from '@trpc/server/adapters/standalone';
import { post, rawPost, serve, testContext } from './fixtures/httpHarness.js';
import { createTestApp, Gate, TEST_KEY_SECRET } from './fixtures/testApp.js';
import { noteReason } from './fixtures/reasonLedger.js';
import type { IdempotencyStore } from '@idem/contract';
import { idemResponseMeta, type IdemServerEvent, type MaskedError } from '../src/index.js';
import { fingerprint } from '../src/hashing/fingerprint.js';
import { hashIdempotencyKey } from '../src/operator.js';

const order = { sku: 'sku-1', quantity: 2 };
const account = () => `acct_${randomUUID().replaceAll('-', '')}`;
const ordersOf = (acct: string) => sql`select 1 from test_orders where scope = ${acct}`;
const recordsOf = (acct: string) => sql`select 1 from idem_records where scope = ${acct}`;

/** The server gates that hold on every store; run once per database. */
export function describeServerGates(name: string, makeEnv: () => Promise<TestEnv>): void {
  describe(`server gates on ${name}`, () => {
    let env: TestEnv;
    let app: ReturnType<typeof createTestApp>;
    let server: Awaited<ReturnType<typeof serve>>;
    const gate = new Gate();
    const events: IdemServerEvent[] = [];
    const masked: MaskedError[] = [];
    beforeAll(async () => {
      env = await makeEnv();
      app = createTestApp(env.store, { gate, events, masked, lockTimeoutMs: 300 });
      server = await serve(app.router);
    });
    afterAll(async () => {
      gate.open();
      await server?.[Symbol.asyncDispose]();
      await env?.[Symbol.asyncDispose]();
    });
    const create = (
      input: unknown,
      key: string | string[] | undefined,
      acct: string,
      body?: string,
    ) =>
      post(server.url, 'orders.create', input, { key, account: acct, ...(body ? { body } : {}) });

    it('runs a keyed mutation once and replays it byte for byte, with Idempotent-Replayed', async () => {
      const acct = account();
      const before = app.counter.calls['orders.create'] ?? 0;
      const first = await create(order, 'k-replay', acct);
      const second = await create(order, 'k-replay', acct);
      expect(first.status).toBe(200);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      expect(second.status).toBe(200);
      expect(second.headers['idempotent-replayed']).toBe('true');
      expect(second.text).toBe(first.text);
      expect(app.counter.calls['orders.create']! - before).toBe(1);
      expect(await env.count(ordersOf(acct))).toBe(1);
    });

    it('answers the same key with a different input 422 every time and keeps the original', async () => {
      const acct = account();
      const first = await create(order, 'k-mismatch', acct);
      for (let i = 0; i < 3; i++) {
        const other = await create({ ...order, quantity: 3 }, 'k-mismatch', acct);
        expect(other.status).toBe(422);
        expect(other.json.error.data.idem.reason).toBe('IDEMPOTENCY_KEY_REUSED');
        expect(other.json.error.data.code).toBe('UNPROCESSABLE_CONTENT');
      }
      const again = await create(order, 'k-mismatch', acct);
      expect(again.text).toBe(first.text);
      expect(await env.count(ordersOf(acct))).toBe(1);
    });

    it('does not count key order or whitespace in the input as a mismatch', async () => {
      const acct = account();
      const input = { sku: 'sku-2', quantity: 1, note: { gift: true, text: 'hi' } };
      const first = await create(input, 'k-order', acct);
      const reordered = await create(
        undefined,
        'k-order',
        acct,
        '{ "note": {"text":"hi",   "gift":true}, "quantity": 1,\n "sku": "sku-2" }',
      );
      expect(reordered.status).toBe(200);
      expect(reordered.headers['idempotent-replayed']).toBe('true');
      expect(reordered.text).toBe(first.text);
    });

    it('compares a live record by the fingerprint algorithm it was made by (records of algorithm 1)', async () => {
      const acct = account();
      const store = env.store as unknown as IdempotencyStore<unknown>;
      const claim = await store.claim({
        scope: acct,
        procedure: 'orders.create',
        keyHash: hashIdempotencyKey('k-v1', TEST_KEY_SECRET, acct),
        fingerprint: fingerprint(order, 1),
        fingerprintVersion: 1,
        leaseMs: 30_000,
        owner: 'before-the-upgrade',
        input: null,
      });
      if (claim.kind !== 'claimed') throw new Error('expected a fresh claim');
      const body = JSON.stringify({ id: -1, sku: order.sku, quantity: order.quantity });
      const windows = { replayWindowMs: 60_000, retentionMs: 60_000 };
      const fence = { id: claim.record.id, version: claim.record.version };
      expect(await store.complete(fence, { status: 200, body, ...windows })).toBe(true);
      const replay = await create(order, 'k-v1', acct);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.json.result.data).toEqual(JSON.parse(body));
      const other = await create({ ...order, quantity: 3 }, 'k-v1', acct);
      expect(other.json.error.data.idem.reason).toBe('IDEMPOTENCY_KEY_REUSED');
      expect(await env.count(ordersOf(acct))).toBe(0);
    });

    it('stores keyed hashes, and a rotation keeps live keys only through previousKeySecrets', async () => {
      const acct = account();
      const before = 'before-the-rotation-0123456789abcdef';
      const after = 'after-the-rotation-0123456789abcdefg';
      const old = createTestApp(env.store as never, { keySecret: before });
      const rotating = createTestApp(env.store as never, {
        keySecret: after,
        previousKeySecrets: [before],
      });
      const switched = createTestApp(env.store as never, { keySecret: after });
      await using oldServer = await serve(old.router);
      await using rotatingServer = await serve(rotating.router);
      await using switchedServer = await serve(switched.router);
      const first = await post(oldServer.url, 'orders.create', order, {
        key: 'k-rot',
        account: acct,
      });
      expect(first.status).toBe(200);
      // The table holds HMAC(secret, scope + key): not the plain SHA-256 of a guessable key.
      const rows = (await env.db.execute(
        sql`select key_hash from idem_records where scope = ${acct}`,
      )) as unknown as { key_hash: string }[] | { rows: { key_hash: string }[] };
      const [row] = Array.isArray(rows) ? rows : rows.rows;
      expect(row!.key_hash).toBe(hashIdempotencyKey('k-rot', before, acct));
      expect(row!.key_hash).not.toBe(createHash('sha256').update('k-rot').digest('hex'));
      // The new secret with the old one listed: the live key is still a retry.
      const retried = await post(rotatingServer.url, 'orders.create', order, {
        key: 'k-rot',
        account: acct,
      });
      expect(retried.headers['idempotent-replayed']).toBe('true');
      expect(retried.text).toBe(first.text);
      // The new secret alone: the live key is a new request (documented).
      const anew = await post(switchedServer.url, 'orders.create', order, {
        key: 'k-rot',
        account: acct,
      });
      expect(anew.status).toBe(200);
      expect(anew.headers['idempotent-replayed']).toBeUndefined();
      expect(await env.count(ordersOf(acct))).toBe(2);
    });

    it('keeps scopes apart: another caller with the same key runs separately and never sees the first result', async () => {
      const a = account();
      const b = account();
      const first = await create(order, 'k-shared', a);
      const second = await create(order, 'k-shared', b);
      expect(second.status).toBe(200);
      expect(second.headers['idempotent-replayed']).toBeUndefined();
      expect(second.json.result.data.id).not.toBe(first.json.result.data.id);
      expect(second.json.result.data.operationId).not.toBe(first.json.result.data.operationId);
      expect(await env.count(ordersOf(a))).toBe(1);
      expect(await env.count(ordersOf(b))).toBe(1);
    });

    it.each([
      ['no key', undefined, 'IDEMPOTENCY_KEY_MISSING'],
      ['an empty key', '', 'IDEMPOTENCY_KEY_INVALID'],
      ['256 characters', 'k'.repeat(256), 'IDEMPOTENCY_KEY_INVALID'],
      ['a tab', 'order\t1', 'IDEMPOTENCY_KEY_INVALID'],
      ['a space', 'order 1', 'IDEMPOTENCY_KEY_INVALID'],
      ['non-ASCII', 'commande-\u00e9', 'IDEMPOTENCY_KEY_INVALID'],
      ['two headers', ['k-one', 'k-two'], 'IDEMPOTENCY_KEY_INVALID'],
    ])('refuses %s with a clean 400 and stores nothing', async (_name, key, reason) => {
      const acct = account();
      const before = app.counter.calls['orders.create'] ?? 0;
      const res = await create(order, key, acct);
      expect(res.status).toBe(400);
      expect(res.json.error.data.idem.reason).toBe(reason);
      expect(app.counter.calls['orders.create'] ?? 0).toBe(before);
      expect(await env.count(recordsOf(acct))).toBe(0);
      expect(await env.count(ordersOf(acct))).toBe(0);
    });

    it('refuses a key with a control character (raw bytes on the socket)', async () => {
      const acct = account();
      const res = await rawPost(
        server.url,
        'orders.create',
        [`Authorization: Bearer ${acct}`, 'Idempotency-Key: k\u0001x'],
        JSON.stringify(order),
      );
      // Either node's HTTP parser refuses the header outright, or idem answers with its reason.
      expect(res.status).toBe(400);
      expect(await env.count(recordsOf(acct))).toBe(0);
    });

    it('leaves nothing stored after a transient failure, and the retry runs again and succeeds', async () => {
      const acct = account();
      const before = app.counter.calls['orders.flaky'] ?? 0;
      const first = await post(server.url, 'orders.flaky', order, {
        key: 'k-flaky',
        account: acct,
      });
      expect(first.status).toBe(503);
      expect(first.json.error.data.idem).toBeUndefined();
      expect(await env.count(recordsOf(acct))).toBe(0);
      expect(await env.count(ordersOf(acct))).toBe(0);
      const retry = await post(server.url, 'orders.flaky', order, {
        key: 'k-flaky',
        account: acct,
      });
      expect(retry.status).toBe(200);
      expect(retry.headers['idempotent-replayed']).toBeUndefined();
      expect(app.counter.calls['orders.flaky']! - before).toBe(2);
      expect(await env.count(ordersOf(acct))).toBe(1);
    });

    it('never runs the handler again for a stored key, whatever Idempotency-Attempt says', async () => {
      // A client that sends `Idempotency-Attempt: 1` on every request (a reload that restarts
      // the count, a second tab, an old client): one committed request, then ten sequential
      // retries. The header is the client's word, not a fact about the key: each retry is a
      // replay, and the handler ran once.
      const acct = account();
      const before = app.counter.calls['orders.place'] ?? 0;
      const send = (input: unknown = order) =>
        post(server.url, 'orders.place', input, { key: 'k-place', account: acct, attempt: 1 });
      const first = await send();
      expect(first.status).toBe(200);
      for (let i = 0; i < 10; i++) {
        const again = await send();
        expect(again.status).toBe(200);
        expect(again.headers['idempotent-replayed']).toBe('true');
        expect(again.text).toBe(first.text);
      }
      expect(app.counter.calls['orders.place']! - before).toBe(1);
      expect(await env.count(ordersOf(acct))).toBe(1);
      // A different input under that key is still told apart (422), and runs nothing either.
      const reused = await send({ ...order, quantity: 3 });
      expect(reused.status).toBe(422);
      expect(reused.json.error.data.idem.reason).toBe('IDEMPOTENCY_KEY_REUSED');
      expect(app.counter.calls['orders.place']! - before).toBe(1);
    });

    it('stores a deterministic failure, rolls back its writes, and replays the same status and body', async () => {
      const acct = account();
      const before = app.counter.calls['orders.reject'] ?? 0;
      const first = await post(server.url, 'orders.reject', order, {
        key: 'k-reject',
        account: acct,
      });
      const again = await post(server.url, 'orders.reject', order, {
        key: 'k-reject',
        account: acct,
      });
      expect(first.status).toBe(404);
      expect(again.status).toBe(404);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.json.error.message).toBe(first.json.error.message);
      expect(again.json.error.data.code).toBe('NOT_FOUND');
      // tRPC's isDev is on here (NODE_ENV is not production): still no stack, byte for byte.
      expect(first.json.error.data.stack).toBeUndefined();
      expect(again.text).toBe(first.text);
      expect(app.counter.calls['orders.reject']! - before).toBe(1);
      expect(await env.count(ordersOf(acct))).toBe(0);
    });

    it('answers a duplicate of a running external-mode request 409 in progress with Retry-After, then replays', async () => {
      const acct = account();
      const running = post(
        server.url,
        'mail.send',
        { to: 'a@example.com' },
        { key: 'k-mail', account: acct },
      );
      // Wait until the claim is committed (external mode commits it before the handler runs).
      await expect.poll(() => env.count(recordsOf(acct)), { timeout: 5000 }).toBe(1);
      const duplicate = await post(
        server.url,
        'mail.send',
        { to: 'a@example.com' },
        { key: 'k-mail', account: acct },
      );
      expect(duplicate.status).toBe(409);
      expect(duplicate.json.error.data.idem.reason).toBe('IDEMPOTENCY_REQUEST_IN_PROGRESS');
      expect(duplicate.json.error.data.idem.retryAfterMs).toBeGreaterThan(0);
      expect(Number(duplicate.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      gate.open();
      const first = await running;
      expect(first.status).toBe(200);
      const replay = await post(
        server.url,
        'mail.send',
        { to: 'a@example.com' },
        { key: 'k-mail', account: acct },
      );
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.text).toBe(first.text);
      expect(app.counter.calls['mail.send']).toBe(1);
    });

    it.each([
      ['a value', { sku: 'tea\u0000', quantity: 1 }, '$.sku'],
      [
        'a nested value',
        { sku: 'tea', quantity: 1, note: { gift: true, text: 'a\u0000b' } },
        '$.note.text',
      ],
    ])(
      'refuses NUL in %s with a clean 400 naming where, and stores nothing',
      async (_n, input, at) => {
        const acct = account();
        const before = app.counter.calls['orders.create'] ?? 0;
        const res = await create(input, 'k-nul', acct);
        expect(res.status).toBe(400);
        expect(res.json.error.data.idem.reason).toBe('IDEMPOTENCY_INPUT_UNSTORABLE');
        expect(res.json.error.message).toContain(at);
        expect(app.counter.calls['orders.create'] ?? 0).toBe(before);
        expect(await env.count(recordsOf(acct))).toBe(0);
        expect(await env.count(ordersOf(acct))).toBe(0);
        // External mode stores its input at the claim: refused before it, nothing held either.
        const mail = await post(
          server.url,
          'mail.send',
          { to: 'a\u0000@example.com' },
          {
            key: 'k-nul-mail',
            account: acct,
          },
        );
        expect(mail.status).toBe(400);
        expect(mail.json.error.data.idem.reason).toBe('IDEMPOTENCY_INPUT_UNSTORABLE');
        expect(await env.count(recordsOf(acct))).toBe(0);
      },
    );

    it('refuses a whole batch that holds an idempotent mutation: 400 per item, nothing runs', async () => {
      const acct = account();
      const before = { ...app.counter.calls };
      // The case: two items sharing one key used to collapse into one execution.
      const res = await httpPost(
        `${server.url}/orders.cancel,orders.create,orders.create?batch=1`,
        JSON.stringify({ 0: { id: 1 }, 1: order, 2: order }),
        { authorization: `Bearer ${acct}`, 'idempotency-key': 'k-batch' },
      );
      noteReason(res);
      expect(res.status).toBe(400);
      expect(res.headers['idempotent-replayed']).toBeUndefined();
      expect(res.json).toHaveLength(3);
      for (const item of res.json) {
        expect(item.error.data.idem.reason).toBe('IDEMPOTENCY_BATCH_REFUSED');
        expect(item.error.data.httpStatus).toBe(400);
      }
      expect(app.counter.calls).toEqual(before);
      expect(await env.count(recordsOf(acct))).toBe(0);
      expect(await env.count(ordersOf(acct))).toBe(0);
      // A batch without idempotent mutations still runs.
      const plain = await httpPost(
        `${server.url}/orders.cancel,orders.cancel?batch=1`,
        JSON.stringify({ 0: { id: 1 }, 1: { id: 2 } }),
        { authorization: `Bearer ${acct}` },
      );
      expect(plain.status).toBe(200);
      expect(app.counter.calls['orders.cancel'] ?? 0).toBe((before['orders.cancel'] ?? 0) + 2);
    });

    it('without tRPC info, still refuses the idempotent items of a batch (from the URL)', async () => {
      const acct = account();
      // createContext without `info`: idem reads the batch from the node request's URL.
      const bare = createHTTPServer({
        router: app.router,
        createContext: ({ req }) => testContext(req),
        responseMeta: idemResponseMeta,
      });
      await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
      try {
        const { port } = bare.address() as AddressInfo;
        const res = await httpPost(
          `http://127.0.0.1:${port}/orders.create?batch=1`,
          JSON.stringify({ 0: order }),
          { authorization: `Bearer ${acct}`, 'idempotency-key': 'k-batch-bare' },
        );
        expect(res.status).toBe(400);
        expect(res.json[0].error.data.idem.reason).toBe('IDEMPOTENCY_BATCH_REFUSED');
        expect(await env.count(recordsOf(acct))).toBe(0);
        expect(await env.count(ordersOf(acct))).toBe(0);
      } finally {
        await new Promise<void>((resolve) => {
          bare.close(() => resolve());
          bare.closeAllConnections();
        });
      }
    });

    it('masks an internal error: a generic message with an error id, the detail to the hook only', async () => {
      const acct = account();
      const res = await post(
        server.url,
        'orders.explode',
        { sku: 'secret-sku', quantity: 1 },
        {
          key: 'k-explode',
          account: acct,
        },
      );
      expect(res.status).toBe(500);
      expect(res.json.error.message).toMatch(/^Internal server error; error id err_[0-9a-f]{16}$/);
      expect(res.text).not.toMatch(/no_such_table|secret-sku|select|Failed query/i);
      expect(res.json.error.data.stack).toBeUndefined();
      const errorId = /err_[0-9a-f]{16}/.exec(res.json.error.message)![0];
      const report = masked.filter((m) => m.errorId === errorId);
      expect(report).toHaveLength(1);
      expect(report[0]!.path).toBe('orders.explode');
      const detail = `${report[0]!.error.message} ${String((report[0]!.error.cause as Error)?.message)}`;
      expect(detail).toMatch(/no_such_table/);
      // A transient failure: released, so nothing is stored and the key may be retried.
      expect(await env.count(recordsOf(acct))).toBe(0);
    });

    it('never logs a key or a body: events carry the key hash only', async () => {
      const acct = account();
      await create({ sku: 'secret-sku', quantity: 1 }, 'k-secret-key', acct);
      const mine = events.filter((e) => e.scope === acct);
      expect(mine.length).toBeGreaterThan(0);
      const text = JSON.stringify(mine);
      expect(text).not.toContain('k-secret-key');
      expect(text).not.toContain('secret-sku');
      expect(mine[0]!.keyHash).toMatch(/^[0-9a-f]{64}$/);
    });

    it('gives each new record a time-ordered operation id (UUID version 7), the one its handler saw, at commit and at claim', async () => {
      const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
      const millisecondsOf = (id: string) =>
        Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16);
      const withId = (acct: string, id: string) =>
        sql`select 1 from idem_records where scope = ${acct} and operation_id = ${id}::uuid`;
      gate.open(); // mail.send waits for it; the 409 test above opened it already
      const acct = account();
      const before = Date.now();
      // Local mode, the key taken at commit (the record is the transaction's last statement) ...
      const local = (await create(order, 'k-opid-local', acct)).json.result.data.operationId;
      // ... and external mode, the key claimed first (a claim of its own).
      const external = (
        await post(
          server.url,
          'mail.send',
          { to: 'b@example.com' },
          { key: 'k-opid-ext', account: acct },
        )
      ).json.result.data.operationId;
      const after = Date.now();
      for (const id of [local, external]) {
        expect(id).toMatch(V7);
        expect(millisecondsOf(id)).toBeGreaterThanOrEqual(before);
        expect(millisecondsOf(id)).toBeLessThanOrEqual(after);
        expect(await env.count(withId(acct, id))).toBe(1);
      }
      expect(millisecondsOf(external)).toBeGreaterThanOrEqual(millisecondsOf(local));
      // A replay keeps the record's id.
      const again = (await create(order, 'k-opid-local', acct)).json.result.data.operationId;
      expect(again).toBe(local);
    });
  });
}
