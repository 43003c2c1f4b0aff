import { appendFileSync, readFileSync } from 'node:fs';

/**
 * What the crash gate's child processes write down as they go, one JSON line each, appended
 * synchronously: a line written before a SIGKILL is on disk after it.
 *
 * - `call`: a downstream call began (`recorder.call`), before the user's function ran.
 * - `lookup`: a lookup answered (`recorder.lookup`): found, not found, or threw.
 * - `boundary`: the procedure's work passed a seam of the store: a claim, a step's intent, an
 *   external step's result, a phase, the outcome written.
 * - `crash`: the child is about to SIGKILL itself at this crash point.
 */
export type JournalEntry =
  | { kind: 'call'; name: string; operationId: string }
  | { kind: 'lookup'; name: string; operationId: string; found: boolean | 'threw' }
  | {
      kind: 'boundary';
      boundary: 'claim' | 'intent' | 'settled' | 'phase' | 'complete';
      step?: string;
      operationId: string;
    }
  | { kind: 'crash'; point: string; operationId: string };

/** The environment variable naming the journal file of a crash gate's child process. */
export const JOURNAL_ENV = 'IDEM_TESTING_CRASH_JOURNAL';

const inMemory: JournalEntry[] = [];

/** Appends to this process's journal: the gate's file in a child process, else in memory. */
export function writeJournal(entry: JournalEntry): void {
  const file = process.env[JOURNAL_ENV];
  if (file) appendFileSync(file, `${JSON.stringify(entry)}\n`);
  else inMemory.push(entry);
}

/** The entries this process wrote in memory (outside a crash gate's child). */
export function memoryJournal(): readonly JournalEntry[] {
  return inMemory;
}

/** Reads a journal file the children wrote. A torn last line (none is expected) is skipped. */
export function readJournal(file: string): JournalEntry[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const entries: JournalEntry[] = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    try {
      entries.push(JSON.parse(line) as JournalEntry);
    } catch {
      // only the line being written at a SIGKILL could be torn
    }
  }
  return entries;
}
