import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the gateway did with one request. */
export type GatewayNote =
  | { type: 'burst'; path: string; status: number; left: number }
  | { type: 'upstream-down'; path: string };

/**
 * A loopback gateway between the demo client and the server, as a load balancer would sit there.
 * It forwards every request unchanged (the Idempotency-Key header included: a gateway must never
 * drop or re-key it) to the current upstream, and it can:
 *
 * - answer a burst of 503s for a procedure without forwarding (an overloaded or draining backend);
 * - answer 502 when the upstream refuses connections (the server is down or restarting);
 * - cut the client's connection when the upstream cut its own (a dropped response stays dropped).
 */
export class FaultGateway {
  /** The server origin requests go to, e.g. `http://127.0.0.1:41234`; swapped on restart. */
  upstream: string;
  readonly #bursts = new Map<string, { status: number; left: number }>();
  readonly #server: Server;

  private constructor(server: Server, upstream: string, onNote: (note: GatewayNote) => void) {
    this.#server = server;
    this.upstream = upstream;
    server.on('request', (req, res) => this.#handle(req, res, onNote));
  }

  static async start(upstream: string, onNote: (note: GatewayNote) => void): Promise<FaultGateway> {
    const gateway = new FaultGateway(createServer(), upstream, onNote);
    await new Promise<void>((resolve) => gateway.#server.listen(0, '127.0.0.1', resolve));
    return gateway;
  }

  /** The gateway's origin, e.g. `http://127.0.0.1:40111`. */
  get origin(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** Answers the next `count` requests to `path` with `status` instead of forwarding them. */
  burst(path: string, count: number, status = 503): void {
    this.#bursts.set(path, { status, left: count });
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #handle(req: IncomingMessage, res: ServerResponse, onNote: (note: GatewayNote) => void): void {
    const path = new URL(req.url ?? '/', 'http://gateway').pathname.split('/').pop() ?? '';
    const burst = this.#bursts.get(path);
    if (burst && burst.left > 0) {
      burst.left--;
      onNote({ type: 'burst', path, status: burst.status, left: burst.left });
      req.resume();
      return page(res, burst.status, 'Service Temporarily Unavailable');
    }
    const target = new URL(this.upstream);
    const upstream = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: target.host, connection: 'close' },
        agent: false,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        // The server cut the connection mid-answer: so does the gateway.
        answer.once('aborted', () => res.destroy());
      },
    );
    upstream.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ECONNREFUSED') {
        onNote({ type: 'upstream-down', path });
        if (!res.headersSent) return page(res, 502, 'Bad Gateway');
      }
      // The server closed the connection without answering (a dropped response, a crash).
      res.destroy();
    });
    req.pipe(upstream);
  }
}

/** An nginx-style HTML error page: tRPC cannot parse it, so only its status speaks. */
function page(res: ServerResponse, status: number, title: string): void {
  res.writeHead(status, { 'content-type': 'text/html', connection: 'close' });
  res.end(
    `<html><head><title>${status} ${title}</title></head><body><h1>${status} ${title}</h1></body></html>\n`,
  );
}
