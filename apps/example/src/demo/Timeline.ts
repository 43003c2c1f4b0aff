import type { IdemGiveUpEvent, IdemRetryEvent } from '@idem/client';
import type { GatewayNote } from './FaultGateway.js';
import type { ServerRecord } from './ServerProcess.js';

/** Who a timeline line speaks for. */
export type Source = 'client' | 'gateway' | 'server' | 'completer' | 'processor' | 'demo';

const short = (id: unknown) => (typeof id === 'string' ? id.slice(0, 8) : '-');

/**
 * The demo's readable timeline: one line per thing that happened, from every side, in the order
 * the demo learnt of it, stamped with seconds since the start. Attempts carry their per-attempt
 * request id (`req`), so a client line and the server lines of the same attempt match up.
 */
export class Timeline {
  #started = Date.now();

  constructor(private readonly write: (line: string) => void) {}

  /** Starts counting seconds from now. */
  resetClock(): void {
    this.#started = Date.now();
  }

  line(source: Source, text: string): void {
    const at = ((Date.now() - this.#started) / 1000).toFixed(2).padStart(6);
    this.write(`  +${at}s  ${source.padEnd(9)}  ${text}`);
  }

  heading(text: string): void {
    this.write(`\n${text}`);
  }

  /** A client attempt that got an answer the caller receives (2xx). */
  answered(
    attempt: string | null,
    requestId: string | null,
    status: number,
    replayed: boolean,
  ): void {
    const replay = replayed ? ', Idempotent-Replayed: true (the stored result)' : '';
    this.line('client', `attempt ${attempt ?? '?'}  req ${short(requestId)}  ${status}${replay}`);
  }

  /** `onRetry` of the idem link. */
  retry(event: IdemRetryEvent): void {
    this.line(
      'client',
      `attempt ${event.attempt}  req ${short(event.requestId)}  ${describeFailure(event)}` +
        `  -> retry in ${event.delayMs} ms with the same key`,
    );
  }

  /** `onGiveUp` of the idem link. */
  giveUp(event: IdemGiveUpEvent): void {
    this.line(
      'client',
      `attempt ${event.attempt}  req ${short(event.requestId)}  ${describeFailure(event)}` +
        `  -> not retried (${event.because})`,
    );
  }

  gateway(note: GatewayNote): void {
    this.line(
      'gateway',
      note.type === 'burst'
        ? `${note.path}: answered ${note.status} without forwarding (${note.left} more to come)`
        : `${note.path}: upstream refused the connection (server down): answered 502`,
    );
  }

  /** A JSON log line of the server; lines the demo does not explain are left out. */
  server(record: ServerRecord): void {
    const requestId = typeof record.requestId === 'string' ? record.requestId : null;
    const source: Source = requestId?.startsWith('completer:') ? 'completer' : 'server';
    const req = source === 'server' ? `  req ${short(requestId)}` : '';
    const op = `op ${short(record.operationId)}`;
    switch (record.msg) {
      case 'idem.executed': {
        const takeover = record.takeover ? ', after taking over an expired lease' : '';
        return this.line(
          source,
          `${record.procedure}: ran the procedure -> ${record.outcome}${takeover}  ${op}${req}`,
        );
      }
      case 'idem.replayed':
        return this.line(
          source,
          `${record.procedure}: replayed the stored ${record.status}  ${op}${req}`,
        );
      case 'idem.rejected':
        return this.line(source, `${record.procedure}: refused, ${record.reason}  ${op}${req}`);
      case 'idem.store-error':
        return this.line(source, `${record.procedure}: key store error  ${op}${req}`);
      case 'fault.drop-response':
        return this.line(
          'server',
          `FAULT: work committed, response dropped (connection cut)${req}`,
        );
      case 'fault.crash':
        return this.line('server', `FAULT: SIGKILL at ${record.point}  ${op}${req}`);
      case 'processor.charge':
        return this.line(
          'processor',
          `charged ${record.chargeId}${record.deduplicated ? ' (a repeated request: same charge)' : ''}  ${op}`,
        );
      case 'processor.lookup':
        return this.line(
          'processor',
          `lookup by operation id: ${record.found ? 'found' : 'not found'}  ${op}`,
        );
      case 'completer.run':
        return this.line(
          'completer',
          `took over ${record.taken} abandoned record(s), finished ${record.finished}`,
        );
    }
  }
}

function describeFailure(event: IdemRetryEvent | IdemGiveUpEvent): string {
  const status =
    event.status === undefined || event.failure.startsWith('http-') ? '' : `${event.status} `;
  return `${status}${event.failure}${event.reason ? ` (${event.reason})` : ''}`;
}
