import { defineIdemTestApp, type IdemGateInputContext, type IdemTestDb } from '@idem/testing';
import { createNotesRouter, createNotesTable, FakeFeed, notes, type Outage } from '../src/notes.js';

/** The downstream every server of a run shares, and the outage switch: what gates arm and count. */
export const feed = new FakeFeed();
export const outage: Outage = { failNext: 0 };

export const notesApp = defineIdemTestApp({
  setup: async (db) => {
    await db.execute(createNotesTable);
  },
  create: ({ db, store }) => ({
    router: createNotesRouter({ db, store, feed, outage }),
    createContext: ({ caller }) => ({ author: caller }),
  }),
});

/** The options every gate on `notes.add` shares. */
export const addNote = {
  path: 'notes.add',
  caller: 'ada',
  input: ({ seed }: IdemGateInputContext) => ({ body: `note ${seed}` }),
  effect: (db: IdemTestDb) => db.$count(notes),
} as const;

/** The options every gate on `notes.publish` shares: the effect is the feed's posts. */
export const publishNote = {
  path: 'notes.publish',
  caller: 'ada',
  input: ({ seed }: IdemGateInputContext) => ({ body: `post ${seed}` }),
  effect: async () => feed.received.length,
} as const;
