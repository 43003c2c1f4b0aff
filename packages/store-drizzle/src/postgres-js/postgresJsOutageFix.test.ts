import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresJsStore } from './createPostgresJsStore.js';
import { postgresJsOutageFix } from './postgresJsOutageFix.js';

const here = dirname(fileURLToPath(import.meta.url));
const shippedPatch = resolve(here, '../../patches/postgres@3.4.9.patch');
/** The workspace's postgres.js, patched at install. */
const patchedDir = resolve(dirname(createRequire(import.meta.url).resolve('postgres')), '../..');

describe('the postgres.js outage check', () => {
  /** A copy of postgres.js as the registry serves it: the shipped patch taken back out. */
  let unpatchedDir: string;
  // postgres.js connects lazily: a client no query ever uses opens nothing.
  const client = postgres('postgres://idem@127.0.0.1:1/never', { max: 1 });
  const db = drizzle(client);

  beforeAll(() => {
    unpatchedDir = join(mkdtempSync(join(tmpdir(), 'idem-postgres-js-')), 'postgres');
    cpSync(patchedDir, unpatchedDir, { recursive: true, dereference: true });
    execFileSync('git', ['apply', '-R', shippedPatch], { cwd: unpatchedDir });
  });
  afterAll(async () => {
    await client.end();
    rmSync(dirname(unpatchedDir), { recursive: true, force: true });
  });

  it('finds the fix in the workspace copy and its absence in the registry one', () => {
    expect(postgresJsOutageFix(patchedDir)).toEqual({ fixed: true, version: '3.4.9' });
    expect(postgresJsOutageFix()).toEqual({ fixed: true, version: '3.4.9' });
    expect(postgresJsOutageFix(unpatchedDir)).toEqual({ fixed: false, version: '3.4.9' });
    expect(postgresJsOutageFix(join(unpatchedDir, 'missing'))).toEqual({ fixed: 'unknown' });
  });

  it('warns once, naming the fixes, on an unpatched copy', () => {
    const warnings: string[] = [];
    const onWarning = (message: string) => warnings.push(message);
    createPostgresJsStore(db, { onWarning, postgresJsPackageDir: unpatchedDir });
    createPostgresJsStore(db, { onWarning, postgresJsPackageDir: unpatchedDir });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('postgres.js 3.4.9 can crash the process');
    expect(warnings[0]).toContain('unhandled rejection');
    expect(warnings[0]).toContain('@idem/store-drizzle/patches/postgres@3.4.9.patch');
    expect(warnings[0]).toContain('@idem/store-drizzle/node-postgres');
    expect(warnings[0]).toContain('postgresJsOutageWarning: false');
  });

  it('says nothing on the patched copy, or once acknowledged', () => {
    const warnings: string[] = [];
    const onWarning = (message: string) => warnings.push(message);
    createPostgresJsStore(db, { onWarning });
    createPostgresJsStore(db, { onWarning, postgresJsPackageDir: patchedDir });
    const acknowledged = join(dirname(unpatchedDir), 'acknowledged');
    cpSync(unpatchedDir, acknowledged, { recursive: true });
    createPostgresJsStore(db, {
      onWarning,
      postgresJsPackageDir: acknowledged,
      postgresJsOutageWarning: false,
    });
    expect(warnings).toEqual([]);
  });
});
