import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { extname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { JOURNAL_ENV } from './crashJournal.js';
import {
  CHILD_CONFIG_ENV,
  LISTENING,
  REFUSED,
  REPORT,
  type CrashChildConfig,
} from './crashChildConfig.js';

/** The child's entry: beside this file, with its extension (`.ts` from sources, `.js` built). */
const CHILD_ENTRY = fileURLToPath(
  new URL(`./crashChild${extname(fileURLToPath(import.meta.url))}`, import.meta.url),
);

/** How long a child may take to serve. */
const START_TIMEOUT_MS = 60_000;

/** One child process of the gate. Dispose to stop it (SIGTERM, then wait for its exit). */
export interface CrashChild extends AsyncDisposable {
  readonly url: string;
  /** How far the child's store clock runs ahead of the database's, in milliseconds. */
  readonly clockShiftMs: number;
  /** The app's factory returned a `completer`. */
  readonly hasCompleter: boolean;
  readonly child: ChildProcess;
  /** Resolves with the signal that ended the process (`SIGKILL` after a crash), or null. */
  readonly exited: Promise<NodeJS.Signals | null>;
  /** Runs the app's completer once in the child; its report, or `{ error }`. */
  complete(): Promise<Record<string, unknown>>;
  /** What the child wrote on stderr, its last 4 000 characters. */
  stderr(): string;
}

/**
 * The node arguments that load the user's TypeScript: `loader` when given, else `--import tsx`
 * with tsx found from the app module, the working directory or this package (in that order);
 * none when the app and this package are plain JavaScript.
 */
export function loaderArgs(appFile: string, loader?: readonly string[]): string[] {
  if (loader) return [...loader];
  for (const from of [
    appFile,
    join(process.cwd(), 'package.json'),
    fileURLToPath(import.meta.url),
  ]) {
    try {
      return ['--import', pathToFileURL(createRequire(from).resolve('tsx')).href];
    } catch {
      // not installed there
    }
  }
  if (/\.[cm]?js$/.test(appFile) && CHILD_ENTRY.endsWith('.js')) return [];
  throw new Error(
    `@idem/testing: crash points run your app module (${appFile}) in a child process under tsx, which is not installed: install it (npm install -D tsx), or pass \`loader\` with the node arguments that load your TypeScript`,
  );
}

/** Starts a child on `config`, writing to `journal`; resolves once it serves. */
export async function spawnCrashChild(
  config: CrashChildConfig,
  journal: string,
  loader: readonly string[],
): Promise<CrashChild> {
  const child = spawn(process.execPath, [...loader, CHILD_ENTRY], {
    env: { ...process.env, [CHILD_CONFIG_ENV]: JSON.stringify(config), [JOURNAL_ENV]: journal },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4_000);
  });
  // `close`, not `exit`: every line the child printed has been read by then.
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.once('close', (_code, signal) => resolve(signal)),
  );
  const reports: ((report: Record<string, unknown>) => void)[] = [];
  const lines = createInterface({ input: child.stdout! });
  const listening = new Promise<{ url: string; clockShiftMs: number; hasCompleter: boolean }>(
    (resolve, reject) => {
      lines.on('line', (line) => {
        const started = LISTENING.exec(line);
        if (started) {
          clearTimeout(timer);
          resolve({
            url: started[1]!,
            clockShiftMs: Number(started[2]),
            hasCompleter: started[3] === 'yes',
          });
        }
        const report = REPORT.exec(line);
        if (report) reports.shift()?.(JSON.parse(report[1]!) as Record<string, unknown>);
        const refused = REFUSED.exec(line);
        if (refused) reject(new TypeError(refused[1]!));
      });
      const timer = setTimeout(() => {
        reject(
          new Error(
            `@idem/testing: crash points: the child process running the app did not serve within ${START_TIMEOUT_MS} ms:\n${stderr}`,
          ),
        );
      }, START_TIMEOUT_MS);
      timer.unref();
      void exited.then(() => clearTimeout(timer));
      void exited.then((signal) =>
        reject(
          new Error(
            `@idem/testing: crash points: the child process running the app exited before serving (${signal ?? `code ${child.exitCode}`}):\n${stderr}`,
          ),
        ),
      );
    },
  );
  let started: Awaited<typeof listening>;
  try {
    started = await listening;
  } catch (error) {
    // Never leave it running, nor return before it has let go of the database.
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
    throw error;
  }
  const { url, clockShiftMs, hasCompleter } = started;
  return {
    url,
    clockShiftMs,
    hasCompleter,
    child,
    exited,
    complete: () =>
      Promise.race([
        new Promise<Record<string, unknown>>((resolve) => {
          reports.push(resolve);
          child.stdin!.write('complete\n');
        }),
        exited.then((signal) => ({ error: `the child exited (${signal ?? child.exitCode})` })),
      ]),
    stderr: () => stderr,
    [Symbol.asyncDispose]: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
