/**
 * SIGTERM under keep-alive load: the example server as a real process on PostgreSQL, eight
 * client loops on one keep-alive agent creating orders and paying them (the processor takes
 * 300 ms, so requests are always in flight), SIGTERM once every loop has paid twice.
 *
 * "No request cut mid-way", precisely: every request the loops sent ends in one of
 *   - full:       a status line and the whole body (the `end` of the response), or
 *   - refused:    ECONNREFUSED, the listener is closed: nothing was sent;
 *   - closed:     ECONNRESET before any byte of a response: a kept-alive socket the server closed
 *                 while it was idle, so the server never read the request;
 * never in `cut` (an error or abort after the response began). "Never read" is checked, not
 * assumed: each loop's orders and payments in the database are exactly those it got a full 200
 * for, every payment is paid and every idem record COMPLETED, so no request ran on the server
 * without its whole answer reaching the client. (`closed` also describes a connection closed
 * by force when the drain time runs out; the second test shows that case, and the first
 * asserts that it did not happen: `forced: 0`.)
 */
import { Agent, request } from 'node:http';
import { createTestDatabase, postgresAvailable } from '@idem/fixtures';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { tokenFor } from '../src/createContext.js';
import { startExampleServer } from './fixtures/exampleServer.js';

const available = await postgresAvailable();

type Outcome =
  | { kind: 'full'; status: number; json: any; connectionClose: boolean }
  | { kind: 'refused' }
  | { kind: 'closed' }
  | { kind: 'cut'; detail: string };

/** One POST on `agent`, classified as above. */
function send(
  agent: Agent,
  url: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<Outcome> {
  return new Promise((resolve) => {
    let responded = false;
    const req = request(url, {
      method: 'POST',
      agent,
      headers: { 'content-type': 'application/json', ...headers },
    });
    req.on('response', (res) => {
      responded = true;
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('aborted', () => resolve({ kind: 'cut', detail: 'response aborted' }));
      res.on('error', (error) => resolve({ kind: 'cut', detail: String(error) }));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        try {
          resolve({
            kind: 'full',
            status: res.statusCode ?? 0,
            json: JSON.parse(text),
            connectionClose: res.headers.connection === 'close',
          });
        } catch {
          resolve({ kind: 'cut', detail: `unreadable body: ${text.slice(0, 80)}` });
        }
      });
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (responded) return resolve({ kind: 'cut', detail: String(error) });
      const code = error.code ?? String(error);
      resolve(
        code === 'ECONNREFUSED'
          ? { kind: 'refused' }
          : code === 'ECONNRESET'
            ? { kind: 'closed' }
            : { kind: 'cut', detail: `${code} before a response` },
      );
    });
    req.end(JSON.stringify(body));
  });
}

describe.skipIf(!available)('shutdown under keep-alive load (PostgreSQL)', () => {
  it('SIGTERM: exits 0 within the drain bound, every request answered in full or never sent', async () => {
    await using database = await createTestDatabase('idem_example_shutdown');
    const drainMs = 5_000;
    const server = await startExampleServer({
      DATABASE_URL: database.url,
      IDEM_EXAMPLE_PROCESSOR_LATENCY_MS: '300',
      IDEM_EXAMPLE_DRAIN_MS: String(drainMs),
    });
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    const LOOPS = 8;
    const accounts = Array.from({ length: LOOPS }, (_, i) => `acct_drain${process.pid}x${i}`);
    const outcomes: Outcome[][] = accounts.map(() => []);
    const paid = accounts.map(() => 0);
    const ordersOk = accounts.map(() => 0);
    let signalled: (() => void) | undefined;
    const everyLoopPaidTwice = new Promise<void>((resolve) => (signalled = resolve));

    const loop = async (i: number) => {
      const auth = { authorization: `Bearer ${tokenFor(accounts[i]!)}` };
      // Bounded: at most 200 orders per loop; in practice it ends at the first request not sent.
      for (let n = 0; n < 200; n++) {
        const order = await send(
          agent,
          `${server.url}/orders.create`,
          { sku: 'tea', quantity: 1 },
          { ...auth, 'idempotency-key': `order-${n}` },
        );
        outcomes[i]!.push(order);
        if (order.kind !== 'full') return;
        expect(order.status).toBe(200);
        ordersOk[i]!++;
        const orderId: string = order.json.result.data.id;
        const payment = await send(
          agent,
          `${server.url}/payments.create`,
          { orderId, amountCents: 100, currency: 'EUR' },
          { ...auth, 'idempotency-key': `payment-${orderId}` },
        );
        outcomes[i]!.push(payment);
        if (payment.kind !== 'full') return;
        expect(payment.status).toBe(200);
        if (++paid[i]! === 2 && paid.every((count) => count >= 2)) signalled!();
      }
    };
    const loops = Promise.all(accounts.map((_, i) => loop(i)));
    await everyLoopPaidTwice;
    const sentAt = performance.now();
    server.process.child.kill('SIGTERM');
    const exit = await server.process.exited;
    const tookMs = performance.now() - sentAt;
    await loops;
    agent.destroy();

    expect(exit).toEqual({ code: 0, signal: null });
    expect(tookMs).toBeLessThan(drainMs);
    const done = server.records.find((r) => r.msg === 'shutdown.done');
    expect(done).toMatchObject({ forced: 0 });
    // The drain had work to do: requests were running when it began.
    expect(done!.inFlight as number).toBeGreaterThan(0);

    const all = outcomes.flat();
    expect(all.filter((o) => o.kind === 'cut')).toEqual([]);
    // Every loop ended at a request that was not sent (the server is gone), after full answers.
    for (const mine of outcomes) {
      expect(['refused', 'closed']).toContain(mine.at(-1)!.kind);
      expect(mine.slice(0, -1).every((o) => o.kind === 'full')).toBe(true);
    }
    // Responses answered during the drain told the client to close their connection.
    expect(all.filter((o) => o.kind === 'full' && o.connectionClose).length).toBeGreaterThan(0);

    const sql = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      for (const [i, account] of accounts.entries()) {
        const [row] = await sql<{ orders: number; paid: number; other: number }[]>`
          select (select count(*)::int from orders where account_id = ${account}) as orders,
                 (select count(*)::int from payments
                   where account_id = ${account} and status = 'paid') as paid,
                 (select count(*)::int from payments
                   where account_id = ${account} and status <> 'paid') as other`;
        expect(row).toEqual({ orders: ordersOk[i], paid: paid[i], other: 0 });
      }
      const states = await sql<{ state: string; n: number }[]>`
        select state, count(*)::int as n from idem_records
         where scope in ${sql(accounts)} group by state`;
      expect(states).toEqual([
        { state: 'COMPLETED', n: ordersOk.reduce((a, b) => a + b) + paid.reduce((a, b) => a + b) },
      ]);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
});

describe.skipIf(!available)('shutdown when requests outlast the drain (PostgreSQL)', () => {
  it('closes what is left when the drain time runs out, and exits within the bound', async () => {
    await using database = await createTestDatabase('idem_example_shutdown');
    const drainMs = 1_000;
    const server = await startExampleServer({
      DATABASE_URL: database.url,
      // Payments take 8 s at the processor (4 s there, 4 s back): far longer than the drain
      // allows. The lease is long enough that the call's time limit (half the lease) does not
      // abort the call first.
      IDEM_EXAMPLE_PROCESSOR_LATENCY_MS: '8000',
      IDEM_EXAMPLE_LEASE_MS: '60000',
      IDEM_EXAMPLE_DRAIN_MS: String(drainMs),
    });
    const agent = new Agent({ keepAlive: true });
    const auth = { authorization: `Bearer ${tokenFor(`acct_slow${process.pid}`)}` };
    const order = await send(
      agent,
      `${server.url}/orders.create`,
      { sku: 'tea', quantity: 1 },
      {
        ...auth,
        'idempotency-key': 'order-slow',
      },
    );
    expect(order).toMatchObject({ kind: 'full', status: 200 });
    const orderId: string = (order as { json: any }).json.result.data.id;
    const payment = send(
      agent,
      `${server.url}/payments.create`,
      { orderId, amountCents: 100, currency: 'EUR' },
      { ...auth, 'idempotency-key': 'payment-slow' },
    );
    // SIGTERM once the payment has reached the processor (its call is recorded on arrival).
    const sql = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      await expect
        .poll(async () => (await sql`select 1 from processor_calls where kind = 'charge'`).length, {
          timeout: 10_000,
        })
        .toBe(1);
    } finally {
      await sql.end({ timeout: 1 });
    }
    const sentAt = performance.now();
    server.process.child.kill('SIGTERM');
    const exit = await server.process.exited;
    const tookMs = performance.now() - sentAt;
    agent.destroy();
    // The bound: the drain, then at most 2 s to stop the workers and close the database.
    expect(tookMs).toBeLessThan(drainMs + 2_000);
    expect(exit.code).toBe(0);
    expect(server.records.find((r) => r.msg === 'shutdown.done')).toMatchObject({
      inFlight: 1,
      forced: 1,
    });
    // The payment's connection was closed under it, before its answer: the client sees a reset
    // and retries with the same key; the record stays IN_PROGRESS under its lease, for the retry
    // or the completer of the next process to finish.
    expect(await payment).toEqual({ kind: 'closed' });
  });
});
