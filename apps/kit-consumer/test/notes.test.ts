import {
  clockGate,
  concurrencyGate,
  failureGate,
  mismatchGate,
  replayGate,
  scopeGate,
  startIdemTestApp,
  type IdemTestAppRouter,
  type IdemTestRun,
} from '@idem/testing';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { addNote, notesApp, outage, publishNote } from './notesApp.js';

// PostgreSQL when a server is named (the kit makes a fresh database there and drops it).
const postgresUrl = process.env.DATABASE_URL ?? process.env.IDEM_TEST_ADMIN_URL;

describe.each([
  { where: 'PGlite', databaseUrl: undefined },
  ...(postgresUrl ? [{ where: 'PostgreSQL', databaseUrl: postgresUrl }] : []),
])('the notes API passes the gates on $where', ({ databaseUrl }) => {
  let run: IdemTestRun<IdemTestAppRouter<typeof notesApp>>;
  beforeAll(async () => {
    run = await startIdemTestApp(notesApp, databaseUrl ? { databaseUrl } : {});
  });
  afterAll(() => run.close());

  it('concurrent duplicates add one note', () => concurrencyGate(run, addNote));
  it('a key reused with another note is refused', () => mismatchGate(run, addNote));
  it("another author's key is its own", () => scopeGate(run, { ...addNote, otherCaller: 'grace' }));
  it('a retry replays byte for byte', () => replayGate(run, addNote));
  it('a forbidden note is stored, an outage released', () =>
    failureGate(run, {
      ...addNote,
      deterministic: { input: ({ seed }) => ({ body: `forbidden ${seed}` }) },
      transient: { input: addNote.input, before: () => void (outage.failNext = 1) },
    }));
  it('the windows and cleanup hold at their boundaries', () => clockGate(run, addNote));
  it('concurrent duplicates post once to the feed', () => concurrencyGate(run, publishNote));
  it('a published note replays, and its lease is taken over once', async () => {
    await replayGate(run, publishNote);
    await clockGate(run, publishNote);
  });
});
