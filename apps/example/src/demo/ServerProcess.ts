import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** A JSON log line of the example server. */
export type ServerRecord = { msg: string } & Record<string, unknown>;

/** How a server process ended. */
export interface ServerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const APP_DIR = fileURLToPath(new URL('../..', import.meta.url));
const SERVE = fileURLToPath(new URL('../serve.ts', import.meta.url));

/**
 * The example server as a child process (`src/serve.ts` under tsx, with workspace sources), the
 * way a process manager runs it: its JSON log lines go to `onRecord`, and `exited` settles when
 * it ends, however it ends.
 */
export class ServerProcess {
  private constructor(
    readonly child: ChildProcess,
    /** The tRPC endpoint it printed, e.g. `http://127.0.0.1:41234/trpc`. */
    readonly url: string,
    readonly exited: Promise<ServerExit>,
    /** The dev secret it printed for `/dev/faults` (with IDEM_EXAMPLE_DEV_CONTROLS=1), or null. */
    readonly devSecret: string | null,
  ) {}

  /** Starts a server with `env` on top of this process's, and waits until it listens. */
  static async start(
    env: Record<string, string>,
    onRecord: (record: ServerRecord) => void,
  ): Promise<ServerProcess> {
    const child = spawn(process.execPath, ['--import', 'tsx', SERVE], {
      cwd: APP_DIR,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise<ServerExit>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    let devSecret: string | null = null;
    const url = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        // Printed before the listening line.
        const secret = /^fault switches on: .* X-Idem-Dev-Secret: ([0-9a-f]{64}) /.exec(line);
        if (secret) devSecret = secret[1]!;
        const listening = /^listening on (\S+)/.exec(line);
        if (listening) return resolve(listening[1]!);
        if (line.startsWith('{')) {
          try {
            onRecord(JSON.parse(line) as ServerRecord);
          } catch {
            // Not one of ours; ignore.
          }
        }
      });
      void exited.then((exit) =>
        reject(new Error(`the server exited before listening (${exit.signal ?? exit.code})`)),
      );
    });
    return new ServerProcess(child, url, exited, devSecret);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** Asks the server to stop (SIGTERM) and waits for it. */
  async stop(): Promise<ServerExit> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    return this.exited;
  }
}
