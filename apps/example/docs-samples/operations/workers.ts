// The workers sample of docs/operations.md, verbatim after the marker.
import { appRouter, idem, store } from '../server/router.js';

declare const log: { info(fields: object, message: string): void };

// ---- verbatim from docs/operations.md: The workers ----
import { createReaper } from '@idem/server';

// In every API process, or in one worker process: both are safe on many instances at once.
const completer = idem.completer({
  router: appRouter,
  // The context a record's procedure runs in: what createContext gives its caller.
  createContext: (record) => ({ accountId: record.scope }),
});
const reaper = createReaper({
  store,
  onReport: ({ deleted, stuck }) => log.info({ deleted, ...stuck }, 'idem reaper'),
});
completer.start(); // a run every 5 s
reaper.start(); // a run every 60 s

process.on('SIGTERM', async () => {
  await Promise.all([completer.stop(), reaper.stop()]); // each waits for its run in flight
});
