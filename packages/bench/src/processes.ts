import { fork, spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Job, JobResult } from './jobs.js';

/**
 * The bench's own TypeScript runs through tsx; idem's packages load from their sources or their
 * builds as the environment's `--conditions` says (`builtPackages.ts`, `fromEnv`).
 */
const EXEC_ARGV = ['--import', 'tsx'];
const children = new Set<ChildProcess>();
// However the orchestrator ends, it leaves no process behind.
process.on('exit', () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
});

function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

async function stop(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

/** A bench server process (see `benchServer.ts`). */
export interface BenchServer extends AsyncDisposable {
  url: string;
  get<T>(path: string): Promise<T>;
  post<T>(path: string, body?: unknown): Promise<T>;
}

/** Starts `benchServer.ts` with `env`, waiting (at most 60 s) for its `listening` line. */
export async function startServer(env: Record<string, string>): Promise<BenchServer> {
  const child = track(
    spawn(
      process.execPath,
      [...EXEC_ARGV, fileURLToPath(new URL('./benchServer.ts', import.meta.url))],
      {
        env: { ...process.env, NODE_ENV: 'production', ...env },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    ),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('bench server did not start in 60 s')), 60_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const match = /^listening (\S+)/.exec(line);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.once('exit', (code) => reject(new Error(`bench server exited early with ${code}`)));
  }).catch(async (error: unknown) => {
    await stop(child, 'SIGKILL');
    throw error;
  });
  const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const response = await fetch(`${url}/__bench/${path}`, {
      method,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = (await response.json()) as T & { error?: string };
    if (!response.ok) throw new Error(`bench server ${path}: ${json.error ?? response.status}`);
    return json;
  };
  return {
    url,
    get: (path) => call('GET', path),
    post: (path, body) => call('POST', path, body ?? {}),
    [Symbol.asyncDispose]: () => stop(child),
  };
}

/** The load generator process (see `loadWorker.ts`). */
export interface LoadWorker extends AsyncDisposable {
  run<J extends Job>(job: J, timeoutMs: number): Promise<JobResult<J>>;
}

/**
 * Forks `loadWorker.ts` with `env` over this process's; each job is bounded by its own timeout
 * (the worker is killed then).
 */
export async function startWorker(env: Record<string, string> = {}): Promise<LoadWorker> {
  const child = track(
    fork(fileURLToPath(new URL('./loadWorker.ts', import.meta.url)), [], {
      execArgv: EXEC_ARGV,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  let nextId = 0;
  const pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  child.on('message', (message: { id: number; ok: boolean; result?: unknown; error?: string }) => {
    const entry = pending.get(message.id);
    pending.delete(message.id);
    if (message.ok) entry?.resolve(message.result);
    else entry?.reject(new Error(`load worker: ${message.error}`));
  });
  child.once('exit', (code) => {
    for (const entry of pending.values())
      entry.reject(new Error(`load worker exited with ${code}`));
    pending.clear();
  });
  return {
    run: <J extends Job>(job: J, timeoutMs: number) =>
      new Promise<JobResult<J>>((resolve, reject) => {
        const id = nextId++;
        const timer = setTimeout(() => {
          reject(new Error(`load job ${job.kind} took longer than ${timeoutMs} ms`));
          child.kill('SIGKILL');
        }, timeoutMs);
        pending.set(id, {
          resolve: (value) => {
            clearTimeout(timer);
            resolve(value as JobResult<J>);
          },
          reject: (error) => {
            clearTimeout(timer);
            reject(error);
          },
        });
        child.send({ id, job });
      }),
    [Symbol.asyncDispose]: async () => {
      if (child.connected) child.disconnect();
      await stop(child);
    },
  };
}
