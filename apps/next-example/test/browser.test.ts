/**
 * The app as it ships: `pnpm migrate`, `next build`, `next start` on PostgreSQL, a fault proxy in
 * front, and Debian's Chromium driven by playwright-core. Every scenario publishes one post and
 * ends with one row, the page showing it published. Waits are for page, process and proxy state,
 * never timers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { IDEMPOTENCY_KEY_HEADER } from '@idem/contract';
import {
  createTestDatabase,
  type Fault,
  FaultProxy,
  freePort,
  htmlPage,
  postgresAvailable,
  type ProxiedRequest,
  type TestDatabase,
} from '@idem/fixtures';
import { createTRPCClient, httpBatchLink } from '@trpc/client';
import { chromium, type Browser, type Page } from 'playwright-core';
import postgres from 'postgres';
import superjson from 'superjson';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { SESSION_COOKIE, sessionCookie } from '../src/server/auth';
import type { AppRouter } from '../src/server/router';

const APP_DIR = fileURLToPath(new URL('..', import.meta.url));
const bin = (name: string) =>
  fileURLToPath(new URL(`../node_modules/.bin/${name}`, import.meta.url));

const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find(
  (path): path is string => !!path && existsSync(path),
);
const available = await postgresAvailable();
// CI installs Chromium (.ci/run): there, a missing browser fails the suite instead of skipping it.
if (process.env.CI === 'true' && !CHROMIUM) {
  throw new Error('Chromium is required in CI: apt-get install -y chromium (see .ci/run)');
}
if (!CHROMIUM) process.stderr.write('next-example: no Chromium found; skipped\n');

const AUTH_SECRET = 'next-example-test-auth-secret-0123456789';
const CREATE_PATH = '/api/trpc/post.create';
const KEY = IDEMPOTENCY_KEY_HEADER.toLowerCase();

/** Runs a command in the app's folder; resolves with its output, rejects with it on failure. */
function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: APP_DIR, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(output) : reject(new Error(`${command} ${args.join(' ')}: ${output}`)),
    );
  });
}

/** Starts `next start` and resolves once it says it is ready. */
function startNext(port: number, env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin('next'), ['start', '-H', '127.0.0.1', '-p', String(port)], {
      cwd: APP_DIR,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (/Ready in/.test(output)) resolve(child);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`next start exited with ${code}: ${output}`)));
  });
}

describe.skipIf(!available || !CHROMIUM)('the Next.js app in Chromium', () => {
  let database: TestDatabase;
  let sql: postgres.Sql;
  let server: ChildProcess | undefined;
  let appOrigin: string;
  let proxy: FaultProxy;
  let browser: Browser;
  let users = 0;

  beforeAll(async () => {
    database = await createTestDatabase('idem_next');
    sql = postgres(database.url, { max: 1, onnotice: () => {} });
    const env = {
      ...process.env,
      DATABASE_URL: database.url,
      IDEM_KEY_SECRET: 'next-example-test-key-secret-0123456789',
      AUTH_SECRET,
      NEXT_TELEMETRY_DISABLED: '1',
      NODE_ENV: 'production' as const,
    };
    await run(bin('tsx'), ['scripts/migrate.ts'], env);
    await run(bin('next'), ['build', '--webpack'], env);
    const port = await freePort();
    server = await startNext(port, env);
    appOrigin = `http://127.0.0.1:${port}`;
    proxy = await FaultProxy.start(appOrigin);
    browser = await chromium.launch({
      executablePath: CHROMIUM!,
      headless: true,
      // Root in a container: Chromium's sandbox needs user namespaces it does not get here.
      args: ['--no-sandbox'],
    });
  });

  afterAll(async () => {
    await browser?.close();
    await proxy?.close();
    if (server && server.exitCode === null) {
      server.removeAllListeners('exit');
      const exited = new Promise((resolve) => server!.once('exit', resolve));
      server.kill('SIGTERM');
      await exited;
    }
    await sql?.end({ timeout: 1 });
    await database?.[Symbol.asyncDispose]();
  });

  function newUser(): string {
    return `user_n${++users}x${process.pid}`;
  }

  async function rows(userId: string): Promise<number> {
    const [row] = await sql`select count(*)::int as n from posts where author_id = ${userId}`;
    return row!.n as number;
  }

  /** A fresh browser context signed in as a new user, on the page through the proxy. */
  async function openPage(): Promise<{ page: Page; userId: string }> {
    const userId = newUser();
    const context = await browser.newContext();
    onTestFinished(() => context.close());
    await context.addCookies([
      { name: SESSION_COOKIE, value: sessionCookie(userId, AUTH_SECRET), url: proxy.origin },
    ]);
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    onTestFinished(() => expect(errors).toEqual([]));
    await page.goto(`${proxy.origin}/`);
    await page.getByTestId('server-count').filter({ hasText: /^0 / }).waitFor();
    await page.getByTestId('title').fill('hello from the browser');
    // Hydrated, with the intent's key made in the browser:
    await page.locator('[data-testid=create][data-key]:not([data-key=""])').waitFor();
    return { page, userId };
  }

  /** Waits for the page to show the post published; returns the type its `createdAt` has. */
  async function published(page: Page): Promise<string | null> {
    const created = page.getByTestId('created');
    await created.waitFor();
    return created.getAttribute('data-created-at');
  }

  function creates(): ProxiedRequest[] {
    return proxy.requests.filter(
      (request) =>
        request.method === 'POST' && new URL(request.url, 'http://x').pathname === CREATE_PATH,
    );
  }

  function faultFirstCreates(count: number, fault: () => Fault): void {
    let seen = 0;
    proxy.plan = (request) =>
      request.method === 'POST' &&
      new URL(request.url, 'http://x').pathname === CREATE_PATH &&
      ++seen <= count
        ? fault()
        : { type: 'pass' };
    onTestFinished(() => {
      proxy.plan = () => ({ type: 'pass' });
    });
  }

  it('a response dropped after the commit: one row, and the page shows the stored post', async () => {
    const { page, userId } = await openPage();
    const key = await page.getByTestId('create').getAttribute('data-key');
    const before = creates().length;
    faultFirstCreates(1, () => ({ type: 'drop-response' }));
    await page.getByTestId('create').click();
    // The replayed post is the first answer's, Date and all (superjson end to end).
    expect(await published(page)).toBe('Date');
    expect(await rows(userId)).toBe(1);
    const sent = creates().slice(before);
    // Dropped, then answered from the stored outcome (by idem's retry or Chromium's own resend).
    expect(sent.map((request) => request.fault.type)).toEqual(['drop-response', 'pass']);
    expect(sent.map((request) => request.headers[KEY])).toEqual([key, key]);
    expect(sent[1]!.upstream?.headers['idempotent-replayed']).toBe('true');
    // The server component renders the post through the shared context factory.
    await page.reload();
    await page.getByTestId('server-count').filter({ hasText: /^1 / }).waitFor();
  });

  it('a burst of 503s from a gateway: one row', async () => {
    const { page, userId } = await openPage();
    const before = creates().length;
    faultFirstCreates(2, () => htmlPage(503, 'Service Temporarily Unavailable'));
    await page.getByTestId('create').click();
    expect(await published(page)).toBe('Date');
    expect(await rows(userId)).toBe(1);
    const sent = creates().slice(before);
    expect(sent.map((request) => request.fault.type)).toEqual(['respond', 'respond', 'pass']);
    expect(new Set(sent.map((request) => request.headers[KEY])).size).toBe(1);
  });

  it('a double click: one row', async () => {
    const { page, userId } = await openPage();
    const before = creates().length;
    await page.getByTestId('create').dblclick();
    await published(page);
    await page
      .getByTestId('count')
      .filter({ hasText: /^1 posts$/ })
      .waitFor();
    expect(await rows(userId)).toBe(1);
    const sent = creates().slice(before);
    expect(sent.length).toBeGreaterThanOrEqual(2);
    expect(new Set(sent.map((request) => request.headers[KEY])).size).toBe(1);
  });

  it('a client without the link still works while the procedure is rolling out (keys optional)', async () => {
    const userId = newUser();
    const cookie = `${SESSION_COOKIE}=${sessionCookie(userId, AUTH_SECRET)}`;
    // Plain fetch, as an old page or a script sends it: no key.
    const response = await fetch(`${appOrigin}${CREATE_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie },
      body: JSON.stringify(superjson.serialize({ title: 'from an old client' })),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('idempotency-protected')).toBe('false');
    expect(await rows(userId)).toBe(1);
    // tRPC's client without idemLink: its batch holds the mutation, which runs unprotected.
    const old = createTRPCClient<AppRouter>({
      links: [
        httpBatchLink({
          url: `${appOrigin}/api/trpc`,
          headers: { cookie },
          transformer: superjson,
        }),
      ],
    });
    const post = await old.post.create.mutate({ title: 'from an old tRPC client' });
    expect(post.createdAt).toBeInstanceOf(Date);
    expect(await rows(userId)).toBe(2);
  });
});
