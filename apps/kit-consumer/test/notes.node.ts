// The same kit from node:test: `tsx --test test/notes.node.ts`.
import { after, before, test } from 'node:test';
import {
  concurrencyGate,
  replayGate,
  startIdemTestApp,
  type IdemTestAppRouter,
  type IdemTestRun,
} from '@idem/testing';
import { addNote, notesApp } from './notesApp.js';

let run: IdemTestRun<IdemTestAppRouter<typeof notesApp>>;
before(async () => {
  run = await startIdemTestApp(notesApp);
});
after(() => run.close());

test('concurrent duplicates add one note', async () => {
  await concurrencyGate(run, addNote);
});
test('a retry replays byte for byte', async () => {
  await replayGate(run, addNote);
});
