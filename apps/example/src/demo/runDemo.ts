import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { idemErrorOf, idemFetch, idemLink, withIdempotencyKey, type IdemFetch } from '@idem/client';
import { createTRPCClient, httpBatchLink } from '@trpc/client';
import type { AppRouter } from '../createAppRouter.js';
import { tokenFor } from '../createContext.js';
import { FaultGateway } from './FaultGateway.js';
import { ServerProcess, type ServerRecord } from './ServerProcess.js';
import { Timeline } from './Timeline.js';

/** Options of {@link runDemo}. */
export interface DemoOptions {
  /** PGlite's folder for the demo server. */
  dataDir: string;
  /** Where the timeline goes, one line per call. */
  write: (line: string) => void;
}

/** Counts the faults the demo injected, so that a verdict is never reached without them. */
interface FaultsSeen {
  dropped: number;
  burst: number;
  crashed: number;
}

/**
 * The demo: a server on embedded PGlite behind a loopback gateway, and a client built on
 * `@idem/client` that creates an order and pays for it while the server drops a committed
 * response, the gateway answers a 503 burst, and the server is killed right after the processor
 * charged the card (then restarted, as a process manager would). Returns whether the guarantee
 * held: one order, one payment, one charge.
 */
export async function runDemo(options: DemoOptions): Promise<boolean> {
  const started = Date.now();
  const timeline = new Timeline(options.write);
  const seen: FaultsSeen = { dropped: 0, burst: 0, crashed: 0 };
  const onRecord = (record: ServerRecord) => {
    if (record.msg === 'fault.drop-response') seen.dropped++;
    if (record.msg === 'fault.crash') seen.crashed++;
    timeline.server(record);
  };
  const baseEnv = {
    PORT: '0',
    DATABASE_URL: '', // the demo always runs on the embedded database
    IDEM_EXAMPLE_DATA_DIR: options.dataDir,
  };
  const faultyEnv = {
    ...baseEnv,
    IDEM_EXAMPLE_DROP_RATE: '0.5',
    IDEM_EXAMPLE_CRASH_AT: 'after-charge-before-record',
  };

  options.write('idem demo: one order and one payment, through injected faults');
  options.write(`  starting the server on embedded PGlite (${options.dataDir}) ...`);
  let server = await ServerProcess.start(faultyEnv, onRecord);
  const gateway = await FaultGateway.start(new URL(server.url).origin, (note) => {
    if (note.type === 'burst') seen.burst++;
    timeline.gateway(note);
  });

  // A process manager: when the server dies, start it again on the same database, without faults.
  let stopping = false;
  const supervise = (current: ServerProcess): void => {
    void current.exited.then(async (exit) => {
      if (stopping) return;
      timeline.line(
        'demo',
        `server pid ${current.pid} died (${exit.signal ?? `exit ${exit.code}`}); restarting it on the same database`,
      );
      server = await ServerProcess.start(baseEnv, onRecord);
      gateway.upstream = new URL(server.url).origin;
      timeline.line('demo', `server pid ${server.pid} listening again`);
      supervise(server);
    });
  };
  supervise(server);

  const account = `acct_demo${randomBytes(4).toString('hex')}`;
  const url = `${gateway.origin}/trpc`;
  // The demo token of the account, signed with the secret the servers use (readConfig.ts).
  const headers = {
    authorization: `Bearer ${tokenFor(account, process.env.IDEM_EXAMPLE_TOKEN_SECRET || undefined)}`,
  };
  // Every answer an idempotent mutation gets, with its attempt and request id, for the timeline.
  const recordingFetch: IdemFetch = async (input, init) => {
    const sent = new Headers(init?.headers as HeadersInit | undefined);
    const response = await fetch(input as string, init as RequestInit);
    if (response.ok) {
      timeline.answered(
        sent.get('idempotency-attempt'),
        sent.get('x-request-id'),
        response.status,
        response.headers.get('idempotent-replayed') === 'true',
      );
    }
    return response;
  };
  const trpc = createTRPCClient<AppRouter>({
    links: [
      idemLink<AppRouter>({
        http: { url, headers, fetch: recordingFetch },
        idempotent: { 'orders.create': true, 'payments.create': true },
        // The defaults are 3 attempts in 30 s; this one call rides out three faults and a restart
        // (a slow machine restarts slowly), so it gets 8 attempts in 60 s.
        maxAttempts: 8,
        deadlineMs: 60_000,
        onRetry: (event) => timeline.retry(event),
        onGiveUp: (event) => timeline.giveUp(event),
      }),
      httpBatchLink({ url, headers, fetch: idemFetch() }),
    ],
  });

  const startup = ((Date.now() - started) / 1000).toFixed(1);
  options.write(`  server pid ${server.pid} at ${server.url} (started in ${startup} s)`);
  options.write(`  client -> gateway ${url} -> server; account ${account}`);
  options.write(
    '  payments.create holds a 3 s lease; the completer looks for abandoned work every 1 s',
  );
  options.write(
    '  the client: @idem/client, full-jitter backoff (500 ms base, 10 s cap); NOT the defaults:\n' +
      '    8 attempts in 60 s (defaults: 3 attempts in 30 s), because one payment call here rides\n' +
      '    out two 503s, a crash and a server restart, which a real client would not expect at once',
  );
  options.write(
    "  req: the attempt's X-Request-Id (new on every attempt); op: the operation id (one per key)",
  );
  timeline.resetClock();
  try {
    const cart = `cart-${account.slice(9)}`;
    timeline.heading(
      `1. orders.create, key order-${cart} (derived from the cart: the same on every attempt).\n` +
        `   The server drops the first committed response.`,
    );
    const order = await trpc.orders.create.mutate(
      { sku: 'tea-sencha', quantity: 2 },
      withIdempotencyKey(`order-${cart}`),
    );
    timeline.line('demo', `order ${order.id} created`);

    const paymentKey = `payment-${order.id}`;
    const payment = { orderId: order.id, amountCents: 1250, currency: 'EUR' } as const;
    timeline.heading(
      `2. payments.create, key ${paymentKey}.\n` +
        `   The gateway answers two 503s; then the server charges the card and is killed before it\n` +
        `   records the charge. Once the dead process's lease runs out, the work resumes (in the\n` +
        `   retry, or in the completer): it asks the processor by operation id, never charges again.`,
    );
    gateway.burst('payments.create', 2);
    const paid = await trpc.payments.create.mutate(payment, withIdempotencyKey(paymentKey));
    timeline.line('demo', `payment ${paid.id} ${paid.status} with charge ${paid.chargeId}`);

    timeline.heading('3. A double click: the same payment with the same key.');
    const again = await trpc.payments.create.mutate(payment, withIdempotencyKey(paymentKey));
    const sameAnswer = isDeepStrictEqual(again, paid);
    timeline.line('demo', sameAnswer ? 'the same payment, no new charge' : 'A DIFFERENT ANSWER');

    timeline.heading('4. A bug: the same key with a different amount.');
    let refused = false;
    try {
      await trpc.payments.create.mutate(
        { ...payment, amountCents: 9900 },
        withIdempotencyKey(paymentKey),
      );
    } catch (error) {
      refused = idemErrorOf(error)?.reason === 'IDEMPOTENCY_KEY_REUSED';
    }
    timeline.line(
      'demo',
      refused ? 'refused with 422, not retried, nothing charged' : 'NOT REFUSED',
    );

    const [orders, payments, stats] = await Promise.all([
      trpc.orders.list.query(),
      trpc.payments.list.query(),
      trpc.processor.stats.query(),
    ]);
    const checks: [string, boolean][] = [
      [`orders for ${account}: ${orders.length} (expected 1)`, orders.length === 1],
      [
        `payments: ${payments.length}, ${payments.map((p) => `${p.status} with ${p.chargeId}`).join(', ')} (expected 1, paid)`,
        payments.length === 1 &&
          payments[0]?.status === 'paid' &&
          payments[0].chargeId === paid.chargeId,
      ],
      [
        `processor: cards charged ${stats.charges} (expected 1); charge calls received ${stats.chargeCalls} ` +
          `(expected 1: the crash came after it); lookups by operation id ${stats.lookupCalls} ` +
          `(how resumed work learns the charge happened; any number)`,
        stats.charges === 1 && stats.chargeCalls === 1,
      ],
      ['the double click got the same answer', sameAnswer],
      ['the reused key was refused', refused],
      [
        `faults injected: ${seen.dropped} dropped response, ${seen.burst} x 503, ${seen.crashed} crash`,
        seen.dropped >= 1 && seen.burst === 2 && seen.crashed === 1,
      ],
    ];
    options.write('\nVerdict, from orders.list, payments.list and processor.stats:');
    for (const [text, ok] of checks) options.write(`  ${ok ? 'ok  ' : 'FAIL'}  ${text}`);
    const held = checks.every(([, ok]) => ok);
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    options.write(
      held
        ? `\nThe guarantee held: one order and one charge, in ${seconds} s (server start-up included).\n` +
            `Retries are safe within the key's scope and replay window.`
        : `\nThe guarantee did NOT hold (${seconds} s).`,
    );
    return held;
  } finally {
    stopping = true;
    await gateway.close();
    await server.stop();
  }
}
