/**
 * Guards the second change of the postgres.js 3.4.9 patch (patches/postgres@3.4.9.patch): a
 * connection whose server died with a query in flight kept that query as its current one, so the
 * next connection attempt's ErrorResponse (57P03, "the database system is starting up" or not
 * accepting connections) waited for a ReadyForQuery that never came, and the attempt was retried
 * until the server accepted connections again: a query issued during a restart waited the whole
 * restart. Here the restarted server stays in recovery (a standby with `hot_standby = off` and no
 * primary), so it refuses every connection with 57P03 for as long as the test likes; the query
 * must fail at once. Unpatched, it waits until the test gives up.
 */
import { chownSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPrivateCluster, postgresAvailable, privateClustersAvailable } from '@idem/fixtures';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';

const available = (await postgresAvailable()) && privateClustersAvailable();

describe.skipIf(!available)('postgres.js while the server restarts', () => {
  it('a query after a crash fails at once with 57P03 instead of waiting for the server', async () => {
    await using cluster = await createPrivateCluster(['hot_standby = off']);
    const sql = postgres(cluster.url(), { max: 1, connect_timeout: 2, onnotice: () => {} });
    try {
      await sql`select 1`;
      // A query in flight when the server dies.
      const inFlight = sql`select pg_sleep(30)`.then(
        () => 'finished',
        (error: { code?: string }) => error.code ?? 'error',
      );
      await new Promise((resolve) => setTimeout(resolve, 200));
      await cluster.crash();
      expect(await inFlight).not.toBe('finished');

      // The server comes back in recovery, refusing connections (57P03) until promoted.
      const signal = join(cluster.dataDir, 'standby.signal');
      writeFileSync(signal, '');
      const owner = statSync(cluster.dataDir);
      chownSync(signal, owner.uid, owner.gid);
      await cluster.start();

      const started = performance.now();
      const outcome = await Promise.race([
        sql`select 1`.then(
          () => 'answered',
          (error: { code?: string }) => error.code ?? 'error',
        ),
        new Promise<string>((resolve) => setTimeout(() => resolve('still waiting'), 10_000)),
      ]);
      expect(outcome).toBe('57P03');
      expect(performance.now() - started).toBeLessThan(5_000);
    } finally {
      await sql.end({ timeout: 0 });
    }
  });
});
