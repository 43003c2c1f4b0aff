// The crash points app module of docs/testing.md, verbatim between the markers, with the
// declarations it assumes.
import type { IdemTestDb } from '@idem/testing';

declare function createTables(db: IdemTestDb): Promise<void>;

// ---- verbatim from docs/testing.md: Crash points ----
// paymentsTestApp.ts
import { createIdempotency, type IdemContext } from '@idem/server';
import { defineIdemTestApp, downstreamRecorder } from '@idem/testing';
import { createAppRouter } from '../src/createAppRouter.js';
import { FakeProcessor } from './FakeProcessor.js';

const recorder = downstreamRecorder();

export default defineIdemTestApp({
  setup: (db) => createTables(db),
  create: ({ db, store }) => {
    const idem = createIdempotency({
      store,
      keySecret: process.env.IDEM_KEY_SECRET!,
      scope: (ctx: IdemContext & { accountId: string }) => ctx.accountId,
    });
    // wrap the steps' call and lookup: the gate counts them, by operation id
    const processor = new FakeProcessor(db);
    const router = createAppRouter({ db, idem, processor, recorder });
    return {
      router,
      createContext: ({ caller }) => ({ accountId: caller }),
      // the completer that finishes work a crash abandoned
      completer: () =>
        idem.completer({ router, createContext: (record) => ({ accountId: record.scope }) }),
    };
  },
});
// ---- end ----
