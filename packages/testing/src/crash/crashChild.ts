/**
 * A child process of the crash points gate (run by `node`, under the user's TypeScript loader):
 * opens the run's database, starts the user's app on one server (the kit's own serving) whose
 * store SIGKILLs this process at the chosen crash point, and prints
 * `idem-crash-child listening <url> shift <ms>`. It then reads commands on stdin: `complete` runs
 * the app's completer once and prints `idem-crash-child report <json>`; `exit`, the end of stdin
 * or SIGTERM close it.
 */
import { createInterface } from 'node:readline';
import type { AnyTRPCRouter } from '@trpc/server';
import { idemRecords } from '@idem/store-drizzle';
import { inArray, sql } from 'drizzle-orm';
import type { IdemTestAppInstance } from '../app/defineIdemTestApp.js';
import type { IdemTestDb } from '../app/IdemTestDatabase.js';
import { startIdemTestApp } from '../app/startIdemTestApp.js';
import { crashProcedureRefusal } from './checkCrashProcedure.js';
import { CHILD_CONFIG_ENV, type CrashChildConfig } from './crashChildConfig.js';
import { openCrashDatabase, shiftedDatabase } from './crashDatabase.js';
import { crashingStore } from './crashingStore.js';
import { completerOf } from './crashTestApp.js';
import { loadCrashApp } from './loadCrashApp.js';

const config = JSON.parse(process.env[CHILD_CONFIG_ENV] ?? 'null') as CrashChildConfig | null;
if (!config) throw new Error(`@idem/testing: ${CHILD_CONFIG_ENV} is not set`);

const app = await loadCrashApp(config.app, config.exportName);
const opened = await openCrashDatabase(config.database);
const clockShiftMs = config.shiftPast ? await msPastLeases(opened.db, config.shiftPast) : 0;
const database = clockShiftMs === 0 ? opened : shiftedDatabase(opened, clockShiftMs);
let instance: IdemTestAppInstance<AnyTRPCRouter> | undefined;
const run = await startIdemTestApp(
  {
    // The gate ran `setup` once, before the first child.
    definition: {
      ...app.definition,
      setup: undefined,
      create: async (parts) => (instance = await app.definition.create(parts)),
    },
  },
  { database, servers: 1, wrapStore: (store) => crashingStore(store, config.crash) },
);
const refusal = crashProcedureRefusal(run.servers[0]!.router, config.path);
if (refusal) {
  process.stdout.write(`idem-crash-child refused ${refusal}\n`);
  await run.close();
  await database.close();
  process.exit(1);
}
const hasCompleter = completerOf(instance) ? 'yes' : 'no';
process.stdout.write(
  `idem-crash-child listening ${run.servers[0]!.url} shift ${clockShiftMs} completer ${hasCompleter}\n`,
);

let closing: Promise<void> | undefined;
const close = () =>
  (closing ??= (async () => {
    await run.close();
    await database.close();
    process.exit(0);
  })());
process.on('SIGTERM', close);

const commands = createInterface({ input: process.stdin });
commands.on('line', async (line) => {
  if (line === 'exit') return void close();
  if (line === 'complete') {
    const completer = completerOf(instance);
    const report = completer
      ? await completer()
          .runOnce()
          .catch((error: unknown) => ({ error: String(error) }))
      : { error: 'no completer' };
    process.stdout.write(`idem-crash-child report ${JSON.stringify(report)}\n`);
  }
});
commands.on('close', () => void close());

/**
 * Milliseconds to move the store's clock so that the leases of `operationIds`, and the instant
 * before which their records may not be taken over, have passed; plus one second.
 */
async function msPastLeases(db: IdemTestDb, operationIds: string[]): Promise<number> {
  if (operationIds.length === 0) return 0;
  const [row] = await db
    .select({
      ms: sql<number>`coalesce(ceil(extract(epoch from max(greatest(${idemRecords.leaseExpiresAt}, ${idemRecords.takeoverAfter})) - statement_timestamp()) * 1000), 0)::int`,
    })
    .from(idemRecords)
    .where(inArray(idemRecords.operationId, operationIds));
  return Math.max(0, Number(row?.ms ?? 0)) + 1_000;
}
