import { spawn } from 'node:child_process';

/** How a child process ended, and what it printed. */
export interface Exited {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command to its end without blocking this process (unlike spawnSync, so a server of this
 * process, such as {@link refusingDatabase}, keeps answering meanwhile). `env` is laid over this
 * process's environment; a key set to undefined is removed. Killed with its process group after
 * `timeoutMs`.
 */
export function runToExit(
  command: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 120_000,
): Promise<Exited> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd,
      env: { ...process.env, ...env },
      detached: true, // its own process group: tsx runs node as a child
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }, timeoutMs);
    child.once('error', (error) => (clearTimeout(timer), reject(error)));
    child.once('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr });
    });
  });
}
