/**
 * The checkout page's headers, on every response of its origin: served by the example server
 * (in process, on an in-memory PGlite) and alone on an origin of its own. That the page still
 * loads and runs under its policy is checkoutBrowser.test.ts's part.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCheckoutOrigin, type CheckoutOrigin } from '../src/checkout/checkoutPage.js';
import { jsonLogger } from '../src/jsonLogger.js';
import { readConfig } from '../src/readConfig.js';
import { startExample, type RunningExample } from '../src/startExample.js';

const FIXED = {
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
};

/** The policy's directives by name. */
function policy(response: Response): Map<string, string> {
  const header = response.headers.get('content-security-policy') ?? '';
  return new Map(
    header
      .split(';')
      .map((part) => part.trim())
      .filter(Boolean)
      .map((part) => {
        const [name, ...values] = part.split(/\s+/);
        return [name!, values.join(' ')] as const;
      }),
  );
}

function expectPageHeaders(response: Response, connectSrc: string): void {
  for (const [name, value] of Object.entries(FIXED)) expect(response.headers.get(name)).toBe(value);
  const directives = policy(response);
  expect(directives.get('frame-ancestors')).toBe("'none'");
  expect(directives.get('default-src')).toBe("'none'");
  expect(directives.get('script-src')).toBe("'self'");
  expect(directives.get('style-src')).toMatch(/^'sha256-[A-Za-z0-9+/]{43}='$/);
  expect(directives.get('connect-src')).toBe(connectSrc);
}

describe('the checkout page on the example server', () => {
  let example: RunningExample;
  let origin: string;

  beforeAll(async () => {
    const config = readConfig({ PORT: '0', IDEM_EXAMPLE_DATA_DIR: 'memory://' });
    example = await startExample(
      config,
      jsonLogger(() => {}),
    );
    origin = new URL(example.url).origin;
  });
  afterAll(() => example?.close());

  it.each([
    ['the HTML', '/', 'text/html; charset=utf-8'],
    ['the HTML (index.html)', '/index.html', 'text/html; charset=utf-8'],
    ['the script', '/checkout.js', 'text/javascript; charset=utf-8'],
  ])('sends its headers on %s', async (_, path, type) => {
    const response = await fetch(`${origin}${path}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe(type);
    expectPageHeaders(response, "'self'");
    await response.arrayBuffer();
  });

  it("hashes the page's inline style, as it is in the HTML", async () => {
    const response = await fetch(`${origin}/`);
    const style = /<style>([\s\S]*?)<\/style>/.exec(await response.text())![1]!;
    const digest = Buffer.from(
      await crypto.subtle.digest('SHA-256', new TextEncoder().encode(style)),
    ).toString('base64');
    expect(policy(response).get('style-src')).toBe(`'sha256-${digest}'`);
  });
});

describe('the checkout page on an origin of its own', () => {
  let served: CheckoutOrigin;

  beforeAll(async () => {
    served = await startCheckoutOrigin(0, 'http://127.0.0.1:3000/trpc');
  });
  afterAll(() => served?.close());

  it.each([
    ['the HTML', '/', 200],
    ['the script', '/checkout.js', 200],
    ['a 404', '/nothing-here', 404],
  ])('sends its headers on %s, letting the page call the API origin', async (_, path, status) => {
    const response = await fetch(`${served.origin}${path}`);
    expect(response.status).toBe(status);
    expectPageHeaders(response, "'self' http://127.0.0.1:3000");
    await response.arrayBuffer();
  });
});
