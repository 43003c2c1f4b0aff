import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type SQL } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { idemMigrationConfig } from '../src/index.js';

/** A fresh, empty database and idem's `migrate` for it. */
export interface MigrationTarget extends AsyncDisposable {
  migrate(): Promise<void>;
  /** Drizzle's migrator with another configuration (another migrations folder). */
  migrateWith(config: typeof idemMigrationConfig): Promise<void>;
  rows<T>(query: SQL): Promise<T[]>;
}

/**
 * A copy of the shipped migrations folder holding only its first `count` migrations, as a
 * database deployed with an earlier release of the package ran them. Removed on dispose.
 */
function shippedUpTo(count: number): typeof idemMigrationConfig & Disposable {
  const source = idemMigrationConfig.migrationsFolder;
  const folder = mkdtempSync(join(tmpdir(), 'idem-migrations-'));
  const journal = JSON.parse(readFileSync(join(source, 'meta/_journal.json'), 'utf8')) as {
    entries: { idx: number; tag: string }[];
  };
  journal.entries = journal.entries.slice(0, count);
  cpSync(join(source, 'meta'), join(folder, 'meta'), { recursive: true });
  writeFileSync(join(folder, 'meta/_journal.json'), JSON.stringify(journal));
  for (const { tag } of journal.entries) {
    cpSync(join(source, `${tag}.sql`), join(folder, `${tag}.sql`));
  }
  return {
    ...idemMigrationConfig,
    migrationsFolder: folder,
    [Symbol.dispose]: () => rmSync(folder, { recursive: true, force: true }),
  };
}

/** How many migrations the package ships (`migrations/meta/_journal.json`). */
const SHIPPED_MIGRATIONS = 3;

const userTables = sql`
  SELECT table_schema || '.' || table_name AS name
  FROM information_schema.tables
  WHERE table_schema NOT IN ('pg_catalog', 'information_schema')
  ORDER BY 1`;

/** What idem's `migrate(db)` must do on every driver. */
export function migrationConformance(name: string, fresh: () => Promise<MigrationTarget>): void {
  describe(`migrate on ${name}`, () => {
    it('creates idem_records and its own journal, leaves the application journal alone, and runs once', async () => {
      await using target = await fresh();
      // The application's own Drizzle journal, with one applied migration.
      await target.rows(sql`CREATE SCHEMA drizzle`);
      await target.rows(
        sql`CREATE TABLE drizzle.__drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)`,
      );
      await target.rows(
        sql`INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES ('app-0001', 4102444800000)`,
      );

      await target.migrate();
      const tables = await target.rows<{ name: string }>(userTables);
      expect(tables.map((t) => t.name)).toEqual([
        'drizzle.__drizzle_migrations',
        'drizzle.__idem_migrations',
        'public.idem_audit',
        'public.idem_records',
      ]);
      const journal = await target.rows<{ n: number }>(
        sql`SELECT count(*)::int AS n FROM drizzle.__idem_migrations`,
      );
      expect(journal).toEqual([{ n: SHIPPED_MIGRATIONS }]);

      // A claim-shaped row goes in, so the second run below must keep it.
      await target.rows(sql`
        INSERT INTO idem_records (scope, procedure, key_hash, fingerprint, fingerprint_version, state, created_at, updated_at)
        VALUES ('s', 'p', 'k', 'f', 1, 'IN_PROGRESS', now(), now())`);

      await target.migrate();
      expect(await target.rows(userTables)).toEqual(tables);
      expect(
        await target.rows(sql`SELECT count(*)::int AS n FROM drizzle.__idem_migrations`),
      ).toEqual([{ n: SHIPPED_MIGRATIONS }]);
      expect(await target.rows(sql`SELECT count(*)::int AS n FROM idem_records`)).toEqual([
        { n: 1 },
      ]);
      expect(
        await target.rows(
          sql`SELECT hash, created_at::text AS created_at FROM drizzle.__drizzle_migrations`,
        ),
      ).toEqual([{ hash: 'app-0001', created_at: '4102444800000' }]);
    });

    it('upgrades a database deployed with 0000 only: its records keep their data', async () => {
      await using target = await fresh();
      using first = shippedUpTo(1);
      await target.migrateWith(first);
      await target.rows(sql`
        INSERT INTO idem_records (scope, procedure, key_hash, fingerprint, fingerprint_version, state, response_status, response_body, created_at, updated_at)
        VALUES ('s', 'p', 'k', 'f', 1, 'COMPLETED', 200, '{"b":1,"a":2}', now(), now())`);

      await target.migrate();
      expect(
        await target.rows(sql`SELECT count(*)::int AS n FROM drizzle.__idem_migrations`),
      ).toEqual([{ n: SHIPPED_MIGRATIONS }]);
      expect(
        await target.rows(sql`
          SELECT state, response_body, input_text, steps, irreversible_at, erased_at
          FROM idem_records`),
      ).toEqual([
        {
          state: 'COMPLETED',
          response_body: '{"b":1,"a":2}',
          input_text: null,
          steps: null,
          irreversible_at: null,
          erased_at: null,
        },
      ]);
      expect(await target.rows(sql`SELECT count(*)::int AS n FROM idem_audit`)).toEqual([{ n: 0 }]);
    });

    it('enforces the record states and one live row per key', async () => {
      await using target = await fresh();
      await target.migrate();
      const insert = (state: string, superseded: boolean) =>
        target.rows(sql`
          INSERT INTO idem_records (scope, procedure, key_hash, fingerprint, fingerprint_version, state, created_at, updated_at, superseded_at)
          VALUES ('s', 'p', 'k', 'f', 1, ${state}, now(), now(), ${superseded ? sql`now()` : sql`NULL`})`);
      await expect(insert('DONE', true)).rejects.toThrow();
      await insert('COMPLETED', true);
      await insert('COMPLETED', true);
      await insert('IN_PROGRESS', false);
      await expect(insert('IN_PROGRESS', false)).rejects.toThrow();
    });
  });
}
