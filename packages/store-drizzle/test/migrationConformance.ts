import { sql, type SQL } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';

/** A fresh, empty database and idem's `migrate` for it. */
export interface MigrationTarget extends AsyncDisposable {
  migrate(): Promise<void>;
  rows<T>(query: SQL): Promise<T[]>;
}

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
        'public.idem_records',
      ]);
      const journal = await target.rows<{ n: number }>(
        sql`SELECT count(*)::int AS n FROM drizzle.__idem_migrations`,
      );
      expect(journal).toEqual([{ n: 1 }]);

      // A claim-shaped row goes in, so the second run below must keep it.
      await target.rows(sql`
        INSERT INTO idem_records (scope, procedure, key_hash, fingerprint, fingerprint_version, state, created_at, updated_at)
        VALUES ('s', 'p', 'k', 'f', 1, 'IN_PROGRESS', now(), now())`);

      await target.migrate();
      expect(await target.rows(userTables)).toEqual(tables);
      expect(
        await target.rows(sql`SELECT count(*)::int AS n FROM drizzle.__idem_migrations`),
      ).toEqual([{ n: 1 }]);
      expect(await target.rows(sql`SELECT count(*)::int AS n FROM idem_records`)).toEqual([
        { n: 1 },
      ]);
      expect(
        await target.rows(
          sql`SELECT hash, created_at::text AS created_at FROM drizzle.__drizzle_migrations`,
        ),
      ).toEqual([{ hash: 'app-0001', created_at: '4102444800000' }]);
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
