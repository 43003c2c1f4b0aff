/** The example's router and settings, in process on an in-memory PGlite: no server, no PostgreSQL. */
import { assertRouterDecided } from '@idem/server';
import { auditRouter } from '@idem/server/operator';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createAppRouter } from '../src/createAppRouter.js';
import { Faults, isDropped } from '../src/Faults.js';
import { jsonLogger } from '../src/jsonLogger.js';
import { openDatabase } from '../src/openDatabase.js';
import { DEFAULT_KEY_SECRET, readConfig } from '../src/readConfig.js';
import { StandInProcessor } from '../src/StandInProcessor.js';

describe('the example app', () => {
  it('decides every mutation: both take keys', async () => {
    const database = await openDatabase({ databaseUrl: null, dataDir: 'memory://' });
    onTestFinished(() => database.close());
    const log = jsonLogger(() => {});
    const { router } = createAppRouter({
      db: database.db,
      store: database.store,
      processor: new StandInProcessor(database.db, 0, log),
      faults: new Faults(null, 0, log),
      log,
      leaseMs: 3_000,
      keySecret: DEFAULT_KEY_SECRET,
    });
    await assertRouterDecided(router);
    expect((await auditRouter(router)).mutations).toMatchObject([
      { path: 'orders.create', decision: 'idempotent' },
      { path: 'payments.create', decision: 'idempotent' },
    ]);
  });

  it.each([
    [0.5, [true, false, true, false, true, false]],
    [1 / 3, [true, false, false, true, false, false]],
    [1, [true, true, true, true, true, true]],
    [0.1, [true, false, false, false, false, false]],
  ])('drops responses evenly at rate %d, starting with the first', (rate, expected) => {
    expect(expected.map((_, i) => isDropped(i + 1, rate))).toEqual(expected);
  });

  it('reads its settings and refuses values it cannot use', () => {
    expect(readConfig({})).toMatchObject({
      port: 3000,
      databaseUrl: null,
      leaseMs: 3_000,
      dropRate: 0,
      crashAt: null,
      maxBodyBytes: 1_048_576,
      drainMs: 10_000,
    });
    expect(() => readConfig({ IDEM_EXAMPLE_DRAIN_MS: '-1' })).toThrow(/IDEM_EXAMPLE_DRAIN_MS/);
    expect(() => readConfig({ IDEM_EXAMPLE_MAX_BODY_BYTES: '1MB' })).toThrow(
      /IDEM_EXAMPLE_MAX_BODY_BYTES/,
    );
    expect(() => readConfig({ IDEM_EXAMPLE_CRASH_AT: 'later' })).toThrow(/after-claim/);
    expect(() => readConfig({ IDEM_EXAMPLE_DROP_RATE: '2' })).toThrow(/0 to 1/);
    expect(() => readConfig({ PORT: 'http' })).toThrow(/PORT/);
    // The fault switches are off unless asked for with exactly 1.
    expect(readConfig({}).devControls).toBe(false);
    expect(readConfig({ IDEM_EXAMPLE_DEV_CONTROLS: '1' }).devControls).toBe(true);
    expect(() => readConfig({ IDEM_EXAMPLE_DEV_CONTROLS: 'yes' })).toThrow(/1 \(on\) or 0/);
    expect(readConfig({}).corsOrigins).toEqual([]);
    expect(
      readConfig({ IDEM_EXAMPLE_CORS_ORIGINS: 'http://127.0.0.1:3001, http://localhost:5173' })
        .corsOrigins,
    ).toEqual(['http://127.0.0.1:3001', 'http://localhost:5173']);
  });
});
