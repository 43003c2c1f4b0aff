import type { CrashDatabaseLocation } from './crashDatabase.js';
import type { CrashPoint } from './crashPoints.js';

/** The environment variable carrying a child's {@link CrashChildConfig}, as JSON. */
export const CHILD_CONFIG_ENV = 'IDEM_TESTING_CRASH_CHILD';

/** What one child process of the crash gate runs. */
export interface CrashChildConfig {
  /** The user's app module (a file URL). */
  app: string;
  /** Its export holding the app definition; defaults to `default`, else the only one. */
  exportName?: string;
  /** The procedure the gate crashes: the child refuses to serve one it cannot run on. */
  path: string;
  /** The run's database, migrated and set up by the gate before any child starts. */
  database: CrashDatabaseLocation;
  /** Where to SIGKILL itself, once. */
  crash?: CrashPoint;
  /**
   * Move the store's clock past the leases (and the earliest takeover) of these operations:
   * a process that arrives after the crashed ones' leases ended.
   */
  shiftPast?: string[];
}

/** The lines a child prints on stdout. */
export const LISTENING = /^idem-crash-child listening (\S+) shift (\d+) completer (yes|no)$/;
export const REPORT = /^idem-crash-child report (.+)$/;
export const REFUSED = /^idem-crash-child refused (.+)$/;
