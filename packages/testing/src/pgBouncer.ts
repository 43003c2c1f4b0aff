import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminUrl, postgresRequired } from './testDatabase.js';
import { freePort, serviceUser, waitForPort } from './systemUser.js';

/** A private PgBouncer in transaction mode in front of one PostgreSQL server. */
export interface PgBouncer extends AsyncDisposable {
  port: number;
  /** `url` (a database on the server behind it) rewritten to go through this PgBouncer. */
  through(url: string): string;
  stop(): Promise<void>;
}

/** The PgBouncer binary, or null when it is not installed (`apt-get install pgbouncer`). */
export function pgBouncerBinary(): string | null {
  for (const path of ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer', '/usr/local/bin/pgbouncer']) {
    if (spawnSync(path, ['--version']).status === 0) return path;
  }
  return null;
}

/**
 * Whether PgBouncer can be started here. Like PostgreSQL, it is required in CI (CI=true) and
 * with IDEM_REQUIRE_POSTGRES=1: a missing binary then fails the run instead of skipping.
 */
export function pgBouncerAvailable(): boolean {
  if (pgBouncerBinary() !== null) return true;
  if (postgresRequired()) {
    throw new Error(
      'PgBouncer is required (CI or IDEM_REQUIRE_POSTGRES=1): apt-get install pgbouncer',
    );
  }
  console.warn('\n!!! pgbouncer is not installed: the PgBouncer suites are SKIPPED.\n');
  return false;
}

/** The PostgreSQL server a PgBouncer forwards to, and the user (and password) it logs in as. */
export interface PgBouncerServer {
  host: string;
  port: number;
  user: string;
  /** Sent to the server when it asks for one; none with trust auth. */
  password?: string;
}

/**
 * The server `IDEM_TEST_ADMIN_URL` names (as `adminUrl()` reads it: 127.0.0.1:5432 as `postgres`
 * when unset), so that a pooler suite reaches the server its test databases are created on.
 */
export function adminServer(url = adminUrl()): PgBouncerServer {
  const parsed = new URL(url);
  const host = decodeURIComponent(parsed.hostname).replace(/^\[(.*)\]$/, '$1');
  if (host === '') {
    throw new Error(
      'IDEM_TEST_ADMIN_URL must name a host for PgBouncer to forward to (postgres://user@host:port/db)',
    );
  }
  return {
    host,
    port: parsed.port === '' ? 5432 : Number(parsed.port),
    user: decodeURIComponent(parsed.username) || 'postgres',
    ...(parsed.password === '' ? {} : { password: decodeURIComponent(parsed.password) }),
  };
}

/**
 * Starts PgBouncer on a free port of 127.0.0.1 with `pool_mode = transaction` (the mode hosted
 * PostgreSQL offers, which cannot carry named prepared statements), every database forwarded to
 * `server` (defaults to the server of `IDEM_TEST_ADMIN_URL`: {@link adminServer}), trust auth for
 * its clients, its config in a fresh temporary folder. Run as the `postgres` user when we are
 * root (PgBouncer refuses root). Dispose (or `stop`) to end it.
 */
export async function startPgBouncer(server: PgBouncerServer = adminServer()): Promise<PgBouncer> {
  const binary = pgBouncerBinary();
  if (binary === null) throw new Error('pgbouncer is not installed: apt-get install pgbouncer');
  const user = serviceUser();
  const dir = mkdtempSync(join(tmpdir(), 'idem-pgbouncer-'));
  user.own(dir);
  const port = await freePort();
  // The password, if any, is what PgBouncer answers the server's password request with.
  const quoted = (value: string) => `"${value.replaceAll('"', '""')}"`;
  writeFileSync(
    join(dir, 'userlist.txt'),
    `${quoted(server.user)} ${quoted(server.password ?? '')}\n`,
  );
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${server.host} port=${server.port}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      'pool_mode = transaction',
      'max_client_conn = 500',
      'default_pool_size = 20',
      'server_login_retry = 1',
      'ignore_startup_parameters = extra_float_digits',
      '',
    ].join('\n'),
  );
  const child = spawn(binary, [join(dir, 'pgbouncer.ini')], {
    uid: user.uid,
    gid: user.gid,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let output = '';
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    await Promise.race([
      waitForPort(port, 10_000),
      exited.then(() => {
        throw new Error(`pgbouncer exited at start: ${output}`);
      }),
    ]);
  } catch (error) {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    })());
  return {
    port,
    through: (url) => {
      const rewritten = new URL(url);
      rewritten.host = `127.0.0.1:${port}`;
      return rewritten.toString();
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
