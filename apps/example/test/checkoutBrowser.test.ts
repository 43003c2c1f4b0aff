/**
 * The checkout page in a real browser: Debian's Chromium driven by playwright-core, the example
 * server as a process on PostgreSQL (`lookup-only` processor: a second charge call would be a
 * second charge), the page on the server's origin and on a second origin (CORS). Every scenario
 * ends with one order and one charge call in the processor's ledger, and the page showing the
 * retry answered from the stored result. Waits are for page state and server state, never timers.
 */
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '@idem/fixtures';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { startCheckoutOrigin, type CheckoutOrigin } from '../src/checkout/checkoutPage.js';
import { tokenFor } from '../src/createContext.js';
import { slowProcessorLatencyMs } from '../src/startExample.js';
import { exampleClient } from './fixtures/exampleClient.js';
import { startExampleServer, type ExampleServer } from './fixtures/exampleServer.js';

const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find(
  (path): path is string => !!path && existsSync(path),
);
const available = await postgresAvailable();
// CI installs Chromium (.ci/run): there, a missing browser fails the suite instead of skipping it.
const required = process.env.CI === 'true';
if (required && !CHROMIUM) {
  throw new Error('Chromium is required in CI: apt-get install -y chromium (see .ci/run)');
}
if (!CHROMIUM) {
  process.stderr.write('checkoutBrowser: no Chromium found (apt-get install chromium); skipped\n');
}

/** Lease 10 s: the charge's time limit is 5 s and a slow charge takes 4 s (2 s each way). */
const LEASE_MS = 10_000;

interface Attempt {
  path: string;
  key: string;
  attempt: number;
  outcome: string;
  retryAfter: string;
}

describe.skipIf(!available || !CHROMIUM)('the checkout page in Chromium', () => {
  let database: TestDatabase;
  let api: ExampleServer;
  let secondOrigin: CheckoutOrigin;
  let browser: Browser;
  let accounts = 0;
  let drops = 0;

  beforeAll(async () => {
    // The second origin first: the API's CORS list names it.
    secondOrigin = await startCheckoutOrigin(0, 'http://127.0.0.1:1/trpc');
    database = await createTestDatabase('idem_browser');
    api = await startExampleServer({
      DATABASE_URL: database.url,
      IDEM_EXAMPLE_DEV_CONTROLS: '1',
      IDEM_EXAMPLE_CORS_ORIGINS: secondOrigin.origin,
      IDEM_EXAMPLE_PROCESSOR: 'lookup-only',
      IDEM_EXAMPLE_LEASE_MS: String(LEASE_MS),
    });
    secondOrigin.apiUrl = api.url;
    secondOrigin.devSecret = api.devSecret!;
    browser = await chromium.launch({
      executablePath: CHROMIUM!,
      headless: true,
      // Root in a container: Chromium's sandbox needs user namespaces it does not get here.
      args: ['--no-sandbox'],
    });
  });

  afterAll(async () => {
    await browser?.close();
    await api?.[Symbol.asyncDispose]();
    await secondOrigin?.close();
    await database?.[Symbol.asyncDispose]();
  });

  beforeEach(async () => {
    await faults({ dropNext: 0, burst503: 0, slowProcessor: false });
  });

  const apiOrigin = () => new URL(api.url).origin;

  async function faults(change: Record<string, unknown>): Promise<void> {
    const response = await fetch(`${apiOrigin()}/dev/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-idem-dev-secret': api.devSecret! },
      body: JSON.stringify(change),
    });
    expect(response.status).toBe(200);
  }

  /** A new account (so counts start at 0) and a fresh browser context (fresh sessionStorage). */
  async function openCheckout(origin = apiOrigin()): Promise<{ page: Page; account: string }> {
    const account = `acct_browser${++accounts}x${process.pid}`;
    const context = await browser.newContext({ viewport: { width: 800, height: 720 } });
    onTestFinished(() => context.close());
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    // The page's own policy must let it run: a script, style or call it blocks is a failure.
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) errors.push(message.text());
    });
    onTestFinished(() => expect(errors).toEqual([]));
    // The token never shows in an address: not the page's, not a request's.
    const token = tokenFor(account);
    const addresses: string[] = [];
    page.on('framenavigated', (frame) => addresses.push(frame.url()));
    page.on('request', (request) => addresses.push(request.url()));
    onTestFinished(async () => {
      expect(addresses.length).toBeGreaterThan(0);
      expect(addresses.filter((address) => address.includes(token))).toEqual([]);
      expect(page.isClosed() || !page.url().includes(token)).toBe(true);
      expect(await context.cookies()).toEqual([]);
    });
    await page.goto(`${origin}/`);
    // The inline style is allowed by its hash.
    expect(await page.evaluate(() => getComputedStyle(document.body).backgroundColor)).toBe(
      'rgb(244, 245, 247)',
    );
    await signIn(page, token);
    return { page, account };
  }

  /** Pastes the token into the sign-in form; the page keeps it in the tab's sessionStorage. */
  async function signIn(page: Page, token: string): Promise<void> {
    await page.getByTestId('token').fill(token);
    await page.getByTestId('sign-in-button').click();
    await page.getByTestId('create-order').waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('checkout:token'))).toBe(token);
  }

  async function createOrder(page: Page): Promise<string> {
    await page.getByTestId('create-order').click();
    await page.getByTestId('order-id').filter({ hasText: /^ord_/ }).waitFor();
    return (await page.getByTestId('order-id').textContent())!;
  }

  async function payKey(page: Page): Promise<string> {
    const key = await page.getByTestId('pay-key').getAttribute('data-key');
    expect(key).toMatch(/^[0-9a-f-]{36}$/);
    return key!;
  }

  async function attempts(page: Page, path = 'payments.create'): Promise<Attempt[]> {
    return page.getByTestId('attempt').evaluateAll(
      (rows, wanted) =>
        rows
          .map((row) => ({
            path: row.getAttribute('data-path') ?? '',
            key: row.getAttribute('data-key') ?? '',
            attempt: Number(row.getAttribute('data-attempt')),
            outcome: row.getAttribute('data-outcome') ?? '',
            retryAfter: row.getAttribute('data-retry-after') ?? '',
          }))
          .filter((row) => row.path === wanted),
      path,
    );
  }

  /** Waits for the payment to show as paid and for a replayed attempt in the page's log. */
  async function paidWithReplay(page: Page): Promise<void> {
    await page
      .getByTestId('pay-result')
      .filter({ hasText: /^paid, charge ch_/ })
      .waitFor();
    await page
      .locator('[data-testid=attempt][data-path="payments.create"][data-outcome=replayed]')
      .first()
      .waitFor();
  }

  /**
   * The response of the fresh execution was dropped: the page never saw it, and got the stored
   * result instead. Either idem's link retried (attempt 1 lost, attempt 2 replayed) or Chromium
   * itself resent the request first: it silently repeats a request, POST included, whose reused
   * keep-alive connection closed before any byte of the answer (then attempt 1 is the replay).
   * The server saw the resend either way: one drop logged, then a replay.
   */
  function expectDroppedThenReplayed(rows: Attempt[], key: string): void {
    expect(new Set(rows.map((row) => row.key))).toEqual(new Set([key]));
    expect(rows.at(-1)).toMatchObject({ outcome: 'replayed' });
    expect(rows.filter((row) => row.outcome === 'ok')).toEqual([]);
    expect(rows.map((row) => row.outcome)).toEqual(
      rows.length === 1 ? ['replayed'] : ['connection-lost', 'replayed'],
    );
    expect(api.records.filter((record) => record.msg === 'fault.drop-response').length).toBe(
      ++drops,
    );
  }

  /** One order, one charge call, one charge: from the server, and as the page shows it. */
  async function expectOneOrderOneCharge(page: Page, account: string): Promise<void> {
    const client = exampleClient(api.url, account);
    expect((await client.orders.list.query()).length).toBe(1);
    expect(await client.processor.stats.query()).toEqual({
      charges: 1,
      chargeCalls: 1,
      lookupCalls: expect.any(Number),
    });
    expect((await client.payments.list.query()).map((payment) => payment.status)).toEqual(['paid']);
    await page
      .getByTestId('counts')
      .filter({ hasText: 'orders 1 · processor charge calls 1 · charges 1' })
      .waitFor();
  }

  it('a double click on Pay: one key, one charge, the second click answered from the stored result', async () => {
    const { page, account } = await openCheckout();
    await createOrder(page);
    const key = await payKey(page);
    await page.getByTestId('pay').dblclick();
    await paidWithReplay(page);

    const rows = await attempts(page);
    // Two calls (two first attempts), one key: the second waited (409) or was replayed at once.
    expect(rows.filter((row) => row.attempt === 1)).toHaveLength(2);
    expect(new Set(rows.map((row) => row.key))).toEqual(new Set([key]));
    expect(rows.filter((row) => row.outcome === 'ok')).toHaveLength(1);
    await expectOneOrderOneCharge(page, account);
    // After the success the intent has a new key (the next payment would be a new intent).
    expect(await payKey(page)).not.toBe(key);
  });

  it('the first response dropped after the charge: the retry is answered from the stored result', async () => {
    const { page, account } = await openCheckout();
    await createOrder(page);
    const key = await payKey(page);
    await page.getByTestId('drop-next').click();
    await page.getByTestId('fault-state').filter({ hasText: 'drop 1' }).waitFor();
    await page.getByTestId('pay').click();
    await paidWithReplay(page);

    expectDroppedThenReplayed(await attempts(page), key);
    await expectOneOrderOneCharge(page, account);
  });

  it('a 503 burst, and an impatient second click: retries after Retry-After, one charge', async () => {
    const { page, account } = await openCheckout();
    await createOrder(page);
    const key = await payKey(page);
    await page.getByTestId('burst-503').click();
    await page.getByTestId('fault-state').filter({ hasText: '503 3' }).waitFor();
    await page.getByTestId('pay').click();
    await page.locator('[data-testid=attempt][data-outcome=unavailable]').first().waitFor();
    // The page shows a 503 and waits to retry; the user clicks again: the same intent, the same key.
    await page.getByTestId('pay').click();
    await paidWithReplay(page);

    const rows = await attempts(page);
    const unavailable = rows.filter((row) => row.outcome === 'unavailable');
    expect(unavailable).toHaveLength(3);
    // The page read the server's Retry-After (the link waits at least that long).
    expect(unavailable.every((row) => row.retryAfter === '1')).toBe(true);
    expect(new Set(rows.map((row) => row.key))).toEqual(new Set([key]));
    expect(rows.filter((row) => row.outcome === 'ok')).toHaveLength(1);
    await expectOneOrderOneCharge(page, account);
    // The README's picture: IDEM_CHECKOUT_SCREENSHOT=../docs-images/checkout.png (from apps/example).
    const screenshot = process.env.IDEM_CHECKOUT_SCREENSHOT;
    if (screenshot) await page.locator('main').screenshot({ path: screenshot });
  });

  it('a reload while the payment is in flight, then Pay again: the same key, answered from the stored result', async () => {
    const { page, account } = await openCheckout();
    const orderId = await createOrder(page);
    const key = await payKey(page);
    await page.getByTestId('slow-processor').click();
    await page.getByTestId('fault-state').filter({ hasText: 'processor slow' }).waitFor();
    await page.getByTestId('pay').click();
    // The processor has charged; its answer takes another half of the slow latency to come back.
    await until(
      () =>
        api.records.some(
          (record) => record.msg === 'processor.charge' && record.accountId === account,
        ),
      'the processor to receive the charge',
    );
    expect(await page.getByTestId('pay-result').textContent()).toBe('paying…');
    await page.reload();

    // The tab kept its order and the payment intent's key across the reload.
    await page.getByTestId('order-id').filter({ hasText: orderId }).waitFor();
    expect(await payKey(page)).toBe(key);
    expect(await attempts(page)).toEqual([]);
    await page.getByTestId('pay').click();
    await paidWithReplay(page);
    const rows = await attempts(page);
    expect(new Set(rows.map((row) => row.key))).toEqual(new Set([key]));
    expect(rows.some((row) => row.outcome === 'ok')).toBe(false);
    await expectOneOrderOneCharge(page, account);
    expect(slowProcessorLatencyMs(LEASE_MS)).toBe(4_000);
  });

  it('the page on a second origin: CORS lets it send the key and read Idempotent-Replayed', async () => {
    const { page, account } = await openCheckout(secondOrigin.origin);
    expect(secondOrigin.origin).not.toBe(apiOrigin());
    await page.getByText('(another origin: CORS)').waitFor();
    await createOrder(page);
    const key = await payKey(page);
    // The fault switch is a cross-origin POST with JSON: it needs the preflight too.
    await page.getByTestId('drop-next').click();
    await page.getByTestId('fault-state').filter({ hasText: 'drop 1' }).waitFor();
    await page.getByTestId('pay').click();
    await paidWithReplay(page);

    // Without Access-Control-Expose-Headers, the replay would read as a first execution ('ok').
    expectDroppedThenReplayed(await attempts(page), key);
    await expectOneOrderOneCharge(page, account);
  });

  it('ignores a token in the URL, and refuses a token the server did not sign', async () => {
    const context = await browser.newContext();
    onTestFinished(() => context.close());
    const page = await context.newPage();
    await page.goto(`${apiOrigin()}/?token=${tokenFor(`acct_url${process.pid}`)}`);
    await page.getByTestId('sign-in').waitFor();
    expect(await page.getByTestId('create-order').count()).toBe(0);
    await page.getByTestId('token').fill('acct_alice1');
    await page.getByTestId('sign-in-button').click();
    await page.getByText('not a demo token').waitFor();
    await signIn(page, tokenFor('acct_alice1', 'another secret'));
    await page.getByTestId('token-refused').waitFor();
    await page.getByTestId('sign-out').click();
    await page.getByTestId('sign-in').waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('checkout:token'))).toBeNull();
  });

  it('a page on another origin cannot frame the checkout page', async () => {
    // The framing page, on a loopback origin of its own (Chromium refuses a public page framing a
    // loopback one before any policy counts: that would prove nothing).
    const framer = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<iframe src="${apiOrigin()}/" width="600" height="400"></iframe>`);
    });
    await new Promise<void>((resolve) => framer.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => new Promise<void>((resolve) => framer.close(() => resolve())));
    const context = await browser.newContext();
    onTestFinished(() => context.close());
    const page = await context.newPage();
    const refused = page.waitForEvent('console', {
      predicate: (message) => /frame-ancestors 'none'/.test(message.text()),
    });
    await page.goto(`http://localhost:${(framer.address() as AddressInfo).port}/`);
    await refused;
    const framed = page.frames().filter((frame) => frame !== page.mainFrame());
    expect(framed).toHaveLength(1);
    expect(await framed[0]!.locator('#root').count()).toBe(0);
  });

  it('an origin the API does not list is refused by the browser: nothing reaches the server', async () => {
    await using stranger = await startCheckoutOrigin(0, api.url);
    const { page, account } = await openCheckout(stranger.origin);
    await page.getByTestId('create-order').click();
    // The preflight has no Access-Control-Allow-Origin: every attempt fails in the browser, as a
    // lost connection would (the page cannot tell), and the link gives up after its 5 attempts.
    await page.getByText('gave up after 5 attempts (connection-lost)').waitFor();
    const rows = await attempts(page, 'orders.create');
    expect(rows.map((row) => row.outcome)).toEqual(Array(5).fill('connection-lost'));
    expect(await exampleClient(api.url, account).orders.list.query()).toEqual([]);
  });
});

/** Polls `check` every 20 ms until it holds, for at most 20 s (a bounded wait, then a failure). */
async function until(check: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 20_000;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
