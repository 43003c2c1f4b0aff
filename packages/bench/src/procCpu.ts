import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of `/proc/<pid>/stat`'s times (`getconf CLK_TCK`; 100 on Linux). */
export const CLOCK_TICKS = readClockTicks();

function readClockTicks(): number {
  try {
    const ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isFinite(ticks) && ticks > 0 ? ticks : 100;
  } catch {
    return 100;
  }
}

/** One process as `/proc/<pid>/stat` shows it: its command name and CPU time so far. */
export interface ProcCpu {
  pid: number;
  comm: string;
  /** utime + stime (of all its threads, or of the one asked for), in µs; resolution 1 tick. */
  cpuUs: number;
}

/**
 * `/proc/<pid>/stat` of one process (all its threads), or `/proc/<pid>/task/<tid>/stat` of one of
 * its threads (the main thread's id is the pid); null when it is gone (or not Linux).
 */
export function procCpu(pid: number, tid?: number): ProcCpu | null {
  let stat: string;
  try {
    stat = readFileSync(
      tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`,
      'utf8',
    );
  } catch {
    return null;
  }
  // `pid (comm) state ppid ...`: comm may hold spaces and parentheses, so split after the last ')'.
  const close = stat.lastIndexOf(')');
  const fields = stat.slice(close + 2).split(' ');
  // Fields 14 (utime) and 15 (stime) of proc(5); `fields[0]` is field 3 (state).
  const ticks = Number(fields[11]) + Number(fields[12]);
  return {
    pid,
    comm: stat.slice(stat.indexOf('(') + 1, close),
    cpuUs: (ticks * 1e6) / CLOCK_TICKS,
  };
}

/** The thread ids of a process (`/proc/<pid>/task`); empty when it is gone. */
export function threadIds(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).map(Number);
  } catch {
    return [];
  }
}

/** Every process on the machine named `comm` (e.g. `postgres`: the server and all its children). */
export function processesNamed(comm: string): ProcCpu[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const found: ProcCpu[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const proc = procCpu(Number(entry));
    if (proc?.comm === comm) found.push(proc);
  }
  return found;
}

/**
 * CPU µs of a set of processes between two readings. A process that appeared in between counts
 * from zero; one that ended in between is lost (its time is not in `after`).
 */
export function cpuBetween(before: ProcCpu[], after: ProcCpu[]): number {
  const start = new Map(before.map((p) => [p.pid, p.cpuUs]));
  return after.reduce((sum, p) => sum + p.cpuUs - (start.get(p.pid) ?? 0), 0);
}
