import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REAPABLE_STATES, recordStateSchema } from '@idem/contract';
import { describe, expect, it } from 'vitest';
import { getTableConfig } from 'drizzle-orm/pg-core';
import { idemMigrationConfig, idemRecords } from '../src/index.js';
import { REAPABLE, RECORD_STATES } from '../src/schema.js';

function shippedSql(): string {
  return readdirSync(idemMigrationConfig.migrationsFolder)
    .filter((file) => file.endsWith('.sql'))
    .sort()
    .map((file) => readFileSync(join(idemMigrationConfig.migrationsFolder, file), 'utf8'))
    .join('\n');
}

describe('schema', () => {
  it('admits exactly the contract record states', () => {
    expect([...RECORD_STATES].sort()).toEqual([...recordStateSchema.options].sort());
    expect([...REAPABLE].sort()).toEqual([...REAPABLE_STATES].sort());
  });

  it('ships migrations that match it', () => {
    const text = shippedSql();
    const states = RECORD_STATES.map((s) => `'${s}'`).join(', ');
    expect(text).toContain(`CHECK ("idem_records"."state" IN (${states}))`);
    expect(text).toMatch(
      /CREATE UNIQUE INDEX "idem_records_live_key_unique" ON "idem_records" USING btree \("scope","procedure","key_hash"\) WHERE "idem_records"\."superseded_at" IS NULL;/,
    );
    expect(text).toMatch(/"response_body" text,/);
    expect(text).toMatch(/"operation_id" uuid DEFAULT gen_random_uuid\(\) NOT NULL/);
    expect(text).toContain(`WHERE "idem_records"."state" = 'IN_PROGRESS'`);
    expect(text).toContain(
      `WHERE "idem_records"."state" IN ('COMPLETED', 'TERMINAL_FAILURE', 'RETRYABLE_FAILURE')`,
    );
  });

  it('has no change drizzle-kit has not generated: columns, indexes and checks match the snapshot', () => {
    const folder = idemMigrationConfig.migrationsFolder;
    const journal = JSON.parse(readFileSync(join(folder, 'meta/_journal.json'), 'utf8')) as {
      entries: { idx: number }[];
    };
    const last = String(journal.entries.at(-1)!.idx).padStart(4, '0');
    const snapshot = JSON.parse(
      readFileSync(join(folder, `meta/${last}_snapshot.json`), 'utf8'),
    ) as {
      tables: Record<string, Record<'columns' | 'indexes' | 'checkConstraints', object>>;
    };
    const generated = snapshot.tables['public.idem_records']!;
    const table = getTableConfig(idemRecords);
    const names = (items: { name?: string | undefined }[]) => items.map((i) => i.name).sort();
    expect(Object.keys(generated.columns).sort()).toEqual(names(table.columns));
    expect(Object.keys(generated.indexes).sort()).toEqual(
      names(table.indexes.map((i) => i.config)),
    );
    expect(Object.keys(generated.checkConstraints).sort()).toEqual(names(table.checks));
  });
});
