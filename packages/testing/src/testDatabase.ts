import { randomBytes } from 'node:crypto';
import postgres from 'postgres';

/**
 * The server test databases are created on. Defaults to the machine's PostgreSQL at
 * 127.0.0.1:5432 with trust auth; override with IDEM_TEST_ADMIN_URL.
 */
export function adminUrl(): string {
  return process.env.IDEM_TEST_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
}

/**
 * PostgreSQL is required in CI (CI=true) and when IDEM_REQUIRE_POSTGRES=1: an unreachable server
 * fails the run there instead of skipping the suites.
 */
export function postgresRequired(): boolean {
  return process.env.CI === 'true' || process.env.IDEM_REQUIRE_POSTGRES === '1';
}

let probed: Promise<boolean> | undefined;

/** Whether the admin server answers; throws when it does not and PostgreSQL is required. */
export function postgresAvailable(): Promise<boolean> {
  probed ??= (async () => {
    const sql = postgres(adminUrl(), { max: 1, connect_timeout: 3, onnotice: () => {} });
    try {
      await sql`select 1`;
      return true;
    } catch (error) {
      if (postgresRequired()) {
        throw new Error(
          `PostgreSQL is required (CI or IDEM_REQUIRE_POSTGRES=1) but ${redact(adminUrl())} is unreachable: ${String(error)}`,
        );
      }
      console.warn(
        `\n!!! PostgreSQL at ${redact(adminUrl())} is unreachable: the PostgreSQL suites are SKIPPED. ` +
          `Set IDEM_TEST_ADMIN_URL, or IDEM_REQUIRE_POSTGRES=1 to make this an error.\n`,
      );
      return false;
    } finally {
      await sql.end({ timeout: 1 });
    }
  })();
  return probed;
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
}

/** A database that exists for one test run and is dropped when disposed. */
export interface TestDatabase extends AsyncDisposable {
  /** Connection string of the fresh database. */
  url: string;
  name: string;
  drop(): Promise<void>;
}

/** Creates a fresh, empty database on the admin server. Dispose it (or call `drop`) when done. */
export async function createTestDatabase(prefix = 'idem_test'): Promise<TestDatabase> {
  const name = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${name}"`);
  } finally {
    await admin.end({ timeout: 1 });
  }
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  let dropped = false;
  const drop = async () => {
    if (dropped) return;
    dropped = true;
    const sql = postgres(adminUrl(), { max: 1, onnotice: () => {} });
    try {
      await sql.unsafe(`drop database if exists "${name}" with (force)`);
    } finally {
      await sql.end({ timeout: 1 });
    }
  };
  return { url: url.toString(), name, drop, [Symbol.asyncDispose]: drop };
}
