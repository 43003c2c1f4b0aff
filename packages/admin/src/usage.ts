import { MAX_LIMIT, MAX_WINDOW_MS } from './commandOptions.js';
import { CONNECT_TIMEOUT_S } from './databaseConnection.js';

/** What `idem-admin --help` prints: the commands, their options, the exit codes. */
export const USAGE = `usage: idem-admin <command> [options] [--verbose]
  audit <module> [--export name]   lists each mutation of the router the module exports as
                                   idempotent, retry-safe, retry-unsafe or undecided (lazy()
                                   routers included); exits 1 when one is undecided, or idem or
                                   retrySafe() is misplaced
record commands (DATABASE_URL must be set):
  show <operationId> [--show-bodies]
  find --scope S --procedure P (--key K | --key-hash H) [--show-bodies]
                                   --key needs IDEM_KEY_SECRET: the app's keySecret
  stuck [--grace-ms 300000] [--limit 50] [--show-bodies]
                                   --grace-ms: 0 to ${MAX_WINDOW_MS} (100 years); --limit: 1 to ${MAX_LIMIT}
  resolve <operationId> --state COMPLETED|TERMINAL_FAILURE|RETRYABLE_FAILURE --actor A --note N
          COMPLETED:        --body '<the procedure's output as JSON>' [--status 200]
                            --replay-window D --retention D
          TERMINAL_FAILURE: --body '{"code":"NOT_FOUND","message":"..."}' (a 4xx tRPC code)
                            [--status: the code's, e.g. 404; another is refused]
                            --replay-window D --retention D
          RETRYABLE_FAILURE: --retention D; no --status, --body or --replay-window
                            (the next retry runs again, resuming from the record's steps)
          --replay-window, --retention: the procedure's replayWindowMs and retentionMs (no
                            defaults; idem's are 24h and 72h), as durations: 7d, 24h, 90m, 30s,
                            1500ms, at most ${MAX_WINDOW_MS / 86_400_000}d. The retention is at least the replay window.
  history <operationId>            the audit rows of a record (resolutions by hand)
  reap [--limit 500]               --limit: 1 to ${MAX_LIMIT}
  erase --scope S
  operation ids are uuids (47e280e2-ca40-4b44-8448-51622564c56e); each option is given once
global options:
  --verbose                        print the stack trace of a failure
  --help, -h                       print this help
exit codes:
  0  done (audit: every mutation decided)
  1  audit found an undecided or misplaced mutation, or an unexpected failure (one line;
     the stack with --verbose)
  2  a usage error (unknown command or option, a missing or malformed value, DATABASE_URL
     not set), or the record asked for does not exist or changed meanwhile; nothing written
  3  the database cannot be reached: refused, unknown host, no answer within the connect
     timeout (${CONNECT_TIMEOUT_S} s; ?connect_timeout=N in DATABASE_URL or PGCONNECT_TIMEOUT),
     or the login refused`;
