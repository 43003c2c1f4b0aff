import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REAPABLE_STATES, recordStateSchema } from '@idem/contract';
import { describe, expect, it } from 'vitest';
import { getTableConfig } from 'drizzle-orm/pg-core';
import { idemAudit, idemMigrationConfig, idemRecords } from '../src/index.js';
import { REAPABLE, RECORD_STATES } from '../src/schema.js';

/**
 * The SHA-256 of every shipped migration. A migration that has shipped is never edited (the
 * databases that ran it would never run the edit): change the schema, generate the next one.
 */
const SHIPPED = {
  '0000_idem_records.sql': '5cc200b733b2f21a75962d0e5c6620cf117e09d6bc9a7cd73a660d49a7ecc44f',
  '0001_recovery_audit.sql': '8c9ed2926cbcae7fb89cbea76e9aa6fec59f39562c257d28eb64e4ae2fad2142',
  '0002_takeover_fence.sql': 'aa520524d6f38382b7f06286c2c5b4a962b7edd6db385baba112f12473fd1d14',
};

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
    expect(text).toMatch(/ADD COLUMN "steps" text;/);
    expect(text).toMatch(/"record_id" bigint NOT NULL,/);
    expect(text).not.toMatch(/REFERENCES/);
    expect(text).toContain(
      `WHERE "idem_records"."state" IN ('PENDING', 'OUTCOME_UNKNOWN', 'NEEDS_RECONCILIATION')`,
    );
  });

  it('never edits a shipped migration', () => {
    const folder = idemMigrationConfig.migrationsFolder;
    const files = readdirSync(folder).filter((file) => file.endsWith('.sql'));
    expect(files.sort()).toEqual(Object.keys(SHIPPED).sort());
    for (const [file, sha256] of Object.entries(SHIPPED)) {
      const text = readFileSync(join(folder, file));
      expect([file, createHash('sha256').update(text).digest('hex')]).toEqual([file, sha256]);
    }
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
    const names = (items: { name?: string | undefined }[]) => items.map((i) => i.name).sort();
    expect(Object.keys(snapshot.tables).sort()).toEqual([
      'public.idem_audit',
      'public.idem_records',
    ]);
    for (const table of [getTableConfig(idemRecords), getTableConfig(idemAudit)]) {
      const generated = snapshot.tables[`public.${table.name}`]!;
      expect(Object.keys(generated.columns).sort()).toEqual(names(table.columns));
      expect(Object.keys(generated.indexes).sort()).toEqual(
        names(table.indexes.map((i) => i.config)),
      );
      expect(Object.keys(generated.checkConstraints).sort()).toEqual(names(table.checks));
    }
  });
});
