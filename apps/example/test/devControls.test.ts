/**
 * The dev fault switches (`/dev/faults`) want the process's secret and JSON: a page on another
 * origin can neither send a simple request that flips them nor pass a preflight to send the
 * secret. The example server in process, on an in-memory PGlite.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { newDevSecret } from '../src/checkout/faultControl.js';
import { jsonLogger } from '../src/jsonLogger.js';
import { readConfig } from '../src/readConfig.js';
import { startExample, type RunningExample } from '../src/startExample.js';

const LISTED = 'http://127.0.0.1:3001';
const FOREIGN = 'http://attacker.example';
const ATTACK = JSON.stringify({ dropNext: 100, burst503: 100, slowProcessor: true });
const OFF = { dropNext: 0, burst503: 0, slowProcessor: false };

describe('the dev fault switches', () => {
  let example: RunningExample;
  let origin: string;
  let secret: string;

  beforeAll(async () => {
    const config = readConfig({
      PORT: '0',
      IDEM_EXAMPLE_DATA_DIR: 'memory://',
      IDEM_EXAMPLE_DEV_CONTROLS: '1',
      IDEM_EXAMPLE_CORS_ORIGINS: LISTED,
    });
    example = await startExample(
      config,
      jsonLogger(() => {}),
    );
    origin = new URL(example.url).origin;
    secret = example.devSecret!;
  });
  afterAll(() => example?.close());

  beforeEach(async () => {
    const response = await post(JSON.stringify(OFF), {
      'content-type': 'application/json',
      'x-idem-dev-secret': secret,
    });
    expect(response.status).toBe(200);
  });

  const post = (body: string, headers: Record<string, string>) =>
    fetch(`${origin}/dev/faults`, { method: 'POST', headers, body });

  /** The switches as the server has them now. */
  async function switches(): Promise<unknown> {
    const response = await fetch(`${origin}/dev/faults`, {
      headers: { 'x-idem-dev-secret': secret },
    });
    expect(response.status).toBe(200);
    return response.json();
  }

  it('makes a new 64-hex-digit secret at every start', () => {
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    expect(newDevSecret()).not.toBe(secret);
  });

  it.each([
    ['no secret', {}, /X-Idem-Dev-Secret is missing/],
    ['a wrong secret', { 'x-idem-dev-secret': 'f'.repeat(64) }, /not this process's dev secret/],
    ['an empty secret', { 'x-idem-dev-secret': '' }, /not this process's dev secret/],
  ])('refuses a GET with %s (403)', async (_, headers, error) => {
    const response = await fetch(`${origin}/dev/faults`, { headers });
    expect(response.status).toBe(403);
    expect(await response.json()).toEqual({ error: expect.stringMatching(error) });
  });

  // Each case's headers, given the secret; a body typed none is a Blob without a type.
  it.each<[string, (secret: string) => Record<string, string>, RegExp]>([
    [
      'a text/plain POST from a foreign origin (a simple request: no preflight)',
      () => ({ origin: FOREIGN, 'content-type': 'text/plain' }),
      /X-Idem-Dev-Secret is missing/,
    ],
    [
      'JSON from a foreign origin without the secret',
      () => ({ origin: FOREIGN, 'content-type': 'application/json' }),
      /X-Idem-Dev-Secret is missing/,
    ],
    [
      'a wrong secret',
      () => ({ 'content-type': 'application/json', 'x-idem-dev-secret': '0'.repeat(64) }),
      /not this process's dev secret/,
    ],
    [
      'half of the secret',
      (secret) => ({ 'content-type': 'application/json', 'x-idem-dev-secret': secret.slice(32) }),
      /not this process's dev secret/,
    ],
    [
      'text/plain with the secret',
      (secret) => ({ 'content-type': 'text/plain', 'x-idem-dev-secret': secret }),
      /got "text\/plain"/,
    ],
    [
      'a form with the secret',
      (secret) => ({
        'content-type': 'application/x-www-form-urlencoded',
        'x-idem-dev-secret': secret,
      }),
      /Content-Type must be application\/json/,
    ],
    ['no Content-Type with the secret', (secret) => ({ 'x-idem-dev-secret': secret }), /got none/],
  ])('refuses %s with 403 and leaves the switches as they were', async (_, headersFor, error) => {
    const headers = headersFor(secret);
    const response = await fetch(`${origin}/dev/faults`, {
      method: 'POST',
      headers,
      body: 'content-type' in headers ? ATTACK : new Blob([ATTACK]),
    });
    expect(response.status).toBe(403);
    expect(await response.json()).toEqual({ error: expect.stringMatching(error) });
    expect(await switches()).toEqual(OFF);
  });

  it('takes a change with the secret and JSON (charset allowed), and reads it back', async () => {
    const response = await post(JSON.stringify({ dropNext: 2, burst503: 1 }), {
      'content-type': 'application/json; charset=utf-8',
      'x-idem-dev-secret': secret,
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ dropNext: 2, burst503: 1, slowProcessor: false });
    expect(await switches()).toEqual({ dropNext: 2, burst503: 1, slowProcessor: false });
  });

  it('grants a foreign origin nothing in a preflight; the listed origin may send the secret', async () => {
    const preflight = (from: string) =>
      fetch(`${origin}/dev/faults`, {
        method: 'OPTIONS',
        headers: {
          origin: from,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type, x-idem-dev-secret',
        },
      });
    const foreign = await preflight(FOREIGN);
    expect(
      [...foreign.headers.keys()].filter((name) => name.startsWith('access-control-')),
    ).toEqual([]);
    const listed = await preflight(LISTED);
    expect(listed.headers.get('access-control-allow-origin')).toBe(LISTED);
    expect(listed.headers.get('access-control-allow-headers')).toMatch(/X-Idem-Dev-Secret/);
    expect(await switches()).toEqual(OFF);
  });

  it('puts the secret in the page it serves, which no other origin may read', async () => {
    const page = await fetch(`${origin}/`, { headers: { origin: LISTED } });
    expect(await page.text()).toContain(`"devSecret":"${secret}"`);
    // Even the listed origin (allowed to call the API) gets no CORS grant on the HTML.
    expect([...page.headers.keys()].filter((name) => name.startsWith('access-control-'))).toEqual(
      [],
    );
    const api = await fetch(`${origin}/trpc/orders.list`, { headers: { origin: LISTED } });
    expect(api.headers.get('access-control-allow-origin')).toBe(LISTED);
  });

  it('is not served without IDEM_EXAMPLE_DEV_CONTROLS=1, and the page gets no secret', async () => {
    const config = readConfig({ PORT: '0', IDEM_EXAMPLE_DATA_DIR: 'memory://' });
    await using off = await startExample(
      config,
      jsonLogger(() => {}),
    );
    expect(off.devSecret).toBeNull();
    const offOrigin = new URL(off.url).origin;
    const response = await fetch(`${offOrigin}/dev/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: ATTACK,
    });
    expect(response.status).not.toBe(200);
    expect(await (await fetch(`${offOrigin}/`)).text()).not.toContain('devSecret');
  });
});
