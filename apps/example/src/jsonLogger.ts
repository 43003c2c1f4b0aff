import type { IdemServerEvent } from '@idem/server';

/** Writes one JSON object per line. Never pass it a request or response body. */
export type JsonLogger = (record: { msg: string } & Record<string, unknown>) => void;

/**
 * A logger that writes one JSON line per record to stdout, with a timestamp and the process id.
 * stdout is synchronous for files and pipes on Linux, so a line written just before a crash
 * injected with SIGKILL is not lost.
 */
export function jsonLogger(
  write: (line: string) => void = (line) => process.stdout.write(line),
): JsonLogger {
  return (record) =>
    write(`${JSON.stringify({ time: new Date().toISOString(), pid: process.pid, ...record })}\n`);
}

/**
 * What may be logged about an error: its name and codes, never its message. A database driver's
 * message can quote the statement and its parameters, and a stored response is a parameter.
 */
export function describeError(error: unknown): { name: string; code?: string } {
  if (!(error instanceof Error)) return { name: typeof error };
  const code =
    (error as { code?: unknown }).code ?? (error.cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? { name: error.name, code } : { name: error.name };
}

/**
 * An error and its causes, outermost first, as {@link describeError} describes each (names and
 * codes, e.g. SQLSTATE `22021`), plus where the innermost one was thrown: stack frames without
 * the message line. Enough to find a failure behind a masked 500 without logging its parameters.
 */
export function describeErrorChain(error: unknown): {
  causes: { name: string; code?: string }[];
  at: string[];
} {
  const causes: { name: string; code?: string }[] = [];
  let current: unknown = error;
  let innermost: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 8; depth++) {
    causes.push(describeOwn(current));
    innermost = current;
    current = current instanceof Error ? current.cause : undefined;
  }
  const stack = innermost instanceof Error ? (innermost.stack ?? '') : '';
  const at = stack
    .split('\n')
    .filter((line) => /^\s+at /.test(line))
    .slice(0, 5)
    .map((line) => line.trim());
  return { causes, at };
}

function describeOwn(error: unknown): { name: string; code?: string } {
  if (!(error instanceof Error)) return { name: typeof error };
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? { name: error.name, code } : { name: error.name };
}

/**
 * idem's event hook, wired to the JSON logger: one line per decision, with the key's hash, the
 * operation id and the client's request id; never a key, an input or a result.
 */
export function logIdemEvent(log: JsonLogger): (event: IdemServerEvent) => void {
  return (event) => {
    const base = {
      msg: `idem.${event.type}`,
      procedure: event.procedure,
      scope: event.scope,
      keyHash: event.keyHash,
      operationId: event.operationId,
      requestId: event.requestId,
    };
    switch (event.type) {
      case 'executed':
        return log({
          ...base,
          outcome: event.outcome,
          takeover: event.takeover,
          durationMs: event.durationMs,
        });
      case 'replayed':
        return log({ ...base, status: event.status });
      case 'rejected':
        return log({ ...base, reason: event.reason });
      case 'store-error':
        return log({ ...base, error: describeError(event.error) });
      case 'unprotected':
        // A call without a key to a `keys: 'optional'` procedure: the rollout's old clients.
        return log(base);
    }
  };
}
