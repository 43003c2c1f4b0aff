/**
 * Starts the example server: `pnpm serve` in apps/example. PostgreSQL when DATABASE_URL is set,
 * embedded PGlite in `.data/pglite` otherwise; migrations apply at start. Prints the URL, then
 * one JSON line per idem decision, worker run and injected fault. Environment: see readConfig.ts.
 */
import { DEV_SECRET_HEADER } from './checkout/faultControl.js';
import { describeError, jsonLogger } from './jsonLogger.js';
import { readConfig } from './readConfig.js';
import { startExample, COMPLETER_INTERVAL_MS, REAPER_INTERVAL_MS } from './startExample.js';

const config = readConfig();
const log = jsonLogger();
const example = await startExample(config, log);
// Before the listening line, which tells ServerProcess the server is up: it reads this one first.
if (example.devSecret) {
  process.stdout.write(
    `fault switches on: /dev/faults wants the header ${DEV_SECRET_HEADER}: ${example.devSecret} (new at every start; the checkout page served here has it)\n`,
  );
}
process.stdout.write(`listening on ${example.url} (${example.database.where})\n`);
process.stdout.write(
  `checkout page: ${new URL('/', example.url).href} (sign in with the token of pnpm demo-token acct_alice1)${config.devControls ? ' (fault switches on)' : ''}\n`,
);
log({
  msg: 'started',
  url: example.url,
  database: example.database.kind,
  leaseMs: config.leaseMs,
  completerIntervalMs: COMPLETER_INTERVAL_MS,
  reaperIntervalMs: REAPER_INTERVAL_MS,
  crashAt: config.crashAt,
  dropRate: config.dropRate,
  maxBodyBytes: config.maxBodyBytes,
  drainMs: config.drainMs,
  devControls: config.devControls,
  corsOrigins: config.corsOrigins,
});

// Shutdown: drain for at most drainMs (readConfig.ts), then stop the workers and close the
// database. Should that hang, the process exits anyway 2 s later (exit code 1).
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log({ msg: 'shutdown.start', signal, drainMs: config.drainMs });
    setTimeout(() => {
      log({ msg: 'shutdown.timeout' });
      process.exit(1);
    }, config.drainMs + 2_000).unref();
    void example.close().then(
      (report) => {
        log({ msg: 'shutdown.done', ...report });
        process.exit(0);
      },
      (error: unknown) => {
        log({ msg: 'shutdown.error', error: describeError(error) });
        process.exit(1);
      },
    );
  });
}
