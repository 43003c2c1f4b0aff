import postgres from 'postgres';
import { randomUUID } from 'node:crypto';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from '@idem/store-drizzle/postgres-js';
import {
  readLiveTemplate,
  recordOutcomeTemplate,
} from '../../store-drizzle/src/commitStatements.js';
import { databaseClock } from '../../store-drizzle/src/databaseClock.js';
const admin = postgres('postgres://postgres@127.0.0.1:5432/postgres', { onnotice: () => {} });
const name = `sqlb_${Date.now()}`;
await admin.unsafe(`CREATE DATABASE ${name}`);
const sql = postgres(`postgres://postgres@127.0.0.1:5432/${name}`, { max: 10, onnotice: () => {} });
await migrate(drizzle(sql));
if (process.env.DROP)
  for (const ix of process.env.DROP.split(','))
    (await sql.unsafe(`ALTER TABLE idem_records DROP CONSTRAINT IF EXISTS ${ix}`).catch(() => {}),
      await sql.unsafe(`DROP INDEX IF EXISTS ${ix}`));
await sql`CREATE TABLE orders (id serial primary key, scope text, sku text, quantity int)`;
const clock = databaseClock(0);
const read = readLiveTemplate(clock).query.sql;
const rec = recordOutcomeTemplate(clock).query.sql;
const simple = `INSERT INTO idem_records (scope, procedure, key_hash, fingerprint, fingerprint_version, state, version, attempts, operation_id, response_status, response_body, created_at, updated_at, completed_at, replay_expires_at, purge_after) VALUES ($1,$2,$3,$4,$5,$6,1,1,$7::uuid,$8,$9,now(),now(),now(),now()+interval '1 day',now()+interval '3 days')`;
const body = JSON.stringify({ id: 1, scope: 'acct_bench', sku: 'bench', quantity: 1 });
const variants: Record<string, () => Promise<unknown>> = {
  plain: () =>
    sql.begin(
      (tx) => tx`INSERT INTO orders (scope, sku, quantity) VALUES ('a', 'bench', 1) RETURNING *`,
    ),
  atCommit: async () => {
    const k = randomUUID();
    await sql.unsafe(read, ['acct', 'p', k], { prepare: true });
    let last: Promise<unknown> | undefined;
    await sql.begin(async (tx) => {
      await tx`INSERT INTO orders (scope, sku, quantity) VALUES ('a', 'bench', 1) RETURNING *`;
      last = tx
        .unsafe(
          rec,
          [
            '2000ms',
            'acct',
            'p',
            k,
            'fp',
            2,
            'COMPLETED',
            randomUUID(),
            200,
            body,
            86400000,
            259200000,
          ] as never[],
          { prepare: true },
        )
        .execute();
      last.catch(() => {});
      await new Promise((r) => setImmediate(r));
    });
    await last;
  },
  simpleRecord: async () => {
    const k = randomUUID();
    await sql.unsafe(read, ['acct', 'p', k], { prepare: true });
    let last: Promise<unknown> | undefined;
    await sql.begin(async (tx) => {
      await tx`INSERT INTO orders (scope, sku, quantity) VALUES ('a', 'bench', 1) RETURNING *`;
      last = tx
        .unsafe(
          simple,
          ['acct', 'p', k, 'fp', 2, 'COMPLETED', randomUUID(), 200, body] as never[],
          { prepare: true },
        )
        .execute();
      last.catch(() => {});
      await new Promise((r) => setImmediate(r));
    });
    await last;
  },
  noRead: async () => {
    const k = randomUUID();
    let last: Promise<unknown> | undefined;
    await sql.begin(async (tx) => {
      await tx`INSERT INTO orders (scope, sku, quantity) VALUES ('a', 'bench', 1) RETURNING *`;
      last = tx
        .unsafe(
          rec,
          [
            '2000ms',
            'acct',
            'p',
            k,
            'fp',
            2,
            'COMPLETED',
            randomUUID(),
            200,
            body,
            86400000,
            259200000,
          ] as never[],
          { prepare: true },
        )
        .execute();
      last.catch(() => {});
      await new Promise((r) => setImmediate(r));
    });
    await last;
  },
};
async function measure(fn: () => Promise<unknown>, conns: number, ms: number) {
  let n = 0;
  const end = Date.now() + ms;
  await Promise.all(
    Array.from({ length: conns }, async () => {
      while (Date.now() < end) {
        await fn();
        n++;
      }
    }),
  );
  return (n * 1000) / ms;
}
const conns = Number(process.argv[2] ?? 8);
delete (variants as Record<string, unknown>).atCommit;
delete (variants as Record<string, unknown>).simpleRecord;
for (const f of Object.values(variants)) await measure(f, conns, 500);
const got: Record<string, number[]> = {};
for (let r = 0; r < 3; r++)
  for (const [k, f] of Object.entries(variants))
    (got[k] ??= []).push(await measure(f, conns, 2000));
const med = (a: number[]) => [...a].sort((x, y) => x - y)[1]!;
const p = med(got.plain!);
console.log(
  `c=${conns} plain ${p.toFixed(0)}`,
  Object.entries(got)
    .map(([k, v]) => `${k} ${(med(v) / p).toFixed(2)}`)
    .join('  '),
);
await sql.end();
await admin.unsafe(`DROP DATABASE ${name}`);
await admin.end();
