import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/** What the page is told when it loads (`<script id="checkout-config">`). */
export interface CheckoutConfig {
  /** The tRPC endpoint: `/trpc` on the same origin, or an absolute URL on another origin. */
  apiUrl: string;
  /**
   * The API's dev secret, for the fault switches (`X-Idem-Dev-Secret`), when it serves them.
   * Embedded in the HTML: only a page of this origin can read it (the HTML is never served to
   * another origin through CORS, and cannot be framed).
   */
  devSecret?: string;
}

const ENTRY = fileURLToPath(new URL('./page/main.tsx', import.meta.url));
let bundle: Promise<string> | undefined;

/**
 * The checkout page's script: `page/main.tsx` and everything it imports (React, TanStack Query,
 * tRPC, `@idem/client` and `@idem/react` from their TypeScript sources) bundled by esbuild, once
 * per process, in memory.
 */
export function bundleCheckout(): Promise<string> {
  return (bundle ??= build({
    entryPoints: [ENTRY],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    legalComments: 'none',
    jsx: 'automatic',
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  }).then(
    (result) => result.outputFiles[0]!.text,
    (error: unknown) => {
      bundle = undefined;
      throw error;
    },
  ));
}

const STYLE = `
  body { font: 14px/1.45 system-ui, sans-serif; margin: 0; background: #f4f5f7; color: #1d2430; }
  main { max-width: 760px; margin: 0 auto; padding: 16px; }
  h1 { font-size: 20px; margin: 0 0 2px; } h2 { font-size: 14px; margin: 0 0 6px; }
  .card { background: #fff; border: 1px solid #dde1e7; border-radius: 6px; padding: 10px 12px; margin: 8px 0; }
  .note { color: #5b6472; font-size: 12px; margin: 0 0 6px; }
  .error { color: #b42318; }
  button { font: inherit; padding: 4px 10px; border-radius: 4px; border: 1px solid #8a93a3; background: #fff; cursor: pointer; }
  button[data-testid="pay"], button[data-testid="create-order"] { background: #2456d3; color: #fff; border-color: #2456d3; }
  button:disabled { opacity: 0.45; cursor: default; }
  button.link { border: none; background: none; color: #2456d3; padding: 0; }
  table { border-collapse: collapse; width: 100%; font-size: 12px; }
  th, td { text-align: left; padding: 3px 6px; border-bottom: 1px solid #eceef2; }
  tr.replayed td { background: #e7f6ec; } tr.ok td { background: #eef3ff; }
  tr.unavailable td, tr.connection-lost td, tr.in-progress td { background: #fff4e5; }
  tr.sending td { color: #5b6472; }
  code { font-size: 12px; }
`;

const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64');

/**
 * The headers of every response of the page's origin. The policy lets the page run its own
 * script and its one inline style (by hash), call its API and nothing else, and never be framed:
 * the HTML may hold the dev secret, and a framed page could be clicked by another site.
 */
export function checkoutHeaders(config: CheckoutConfig): Record<string, string> {
  // `/trpc` is this origin; an absolute URL is another one, which the page calls through CORS.
  const absolute = /^[a-z][a-z0-9+.-]*:/i.test(config.apiUrl);
  const connect = absolute ? `'self' ${new URL(config.apiUrl).origin}` : "'self'";
  return {
    'content-security-policy': [
      "default-src 'none'",
      "script-src 'self'",
      `style-src 'sha256-${STYLE_HASH}'`,
      `connect-src ${connect}`,
      // The favicon is `data:,`.
      'img-src data:',
      "base-uri 'none'",
      "form-action 'none'",
      "frame-ancestors 'none'",
    ].join('; '),
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
  };
}

/** The page's HTML, with its configuration. */
export function checkoutHtml(config: CheckoutConfig): string {
  // JSON inside a script element: escape "<" so no value can close the element.
  const json = JSON.stringify(config).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>idem checkout</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
<div id="root"></div>
<script type="application/json" id="checkout-config">${json}</script>
<script type="module" src="/checkout.js"></script>
</body>
</html>
`;
}

/**
 * Serves the checkout page: `GET /` (the HTML) and `GET /checkout.js` (the bundle). A
 * connect-style middleware: other requests go on to `next`.
 */
export function checkoutPage(config: CheckoutConfig | (() => CheckoutConfig)) {
  const configOf = typeof config === 'function' ? config : () => config;
  return (req: IncomingMessage, res: ServerResponse, next: () => void): void => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const pageConfig = configOf();
    const headers = checkoutHeaders(pageConfig);
    if (path === '/' || path === '/index.html') {
      // The HTML holds the dev secret: no other origin may read it, listed for CORS or not.
      for (const name of res.getHeaderNames()) {
        if (name.startsWith('access-control-')) res.removeHeader(name);
      }
      return send(res, 200, 'text/html; charset=utf-8', checkoutHtml(pageConfig), headers);
    }
    if (path === '/checkout.js') {
      void bundleCheckout().then(
        (code) => send(res, 200, 'text/javascript; charset=utf-8', code, headers),
        (error: unknown) =>
          send(res, 500, 'text/plain', `bundling failed: ${String(error)}`, headers),
      );
      return;
    }
    next();
  };
}

/** The page on an origin of its own (another port), calling the API on its origin through CORS. */
export interface CheckoutOrigin extends AsyncDisposable {
  /** e.g. `http://127.0.0.1:3001` */
  origin: string;
  /** The API the page calls; may be set after start (the API's CORS list needs this origin). */
  apiUrl: string;
  /** The API's dev secret, for the page's fault switches; may be set after start. */
  devSecret: string | undefined;
  close(): Promise<void>;
}

/** Serves the page alone on 127.0.0.1:`port` (0 picks a free port). */
export async function startCheckoutOrigin(
  port: number,
  apiUrl: string,
  devSecret?: string,
): Promise<CheckoutOrigin> {
  const served: CheckoutOrigin = {
    origin: '',
    apiUrl,
    devSecret,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    [Symbol.asyncDispose]: () => served.close(),
  };
  const page = checkoutPage(() => ({
    apiUrl: served.apiUrl,
    ...(served.devSecret ? { devSecret: served.devSecret } : {}),
  }));
  // Every response of this origin carries the page's headers, a 404 too.
  const server = createServer((req, res) =>
    page(req, res, () =>
      send(res, 404, 'text/plain', 'not found', checkoutHeaders({ apiUrl: served.apiUrl })),
    ),
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  served.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return served;
}

function send(
  res: ServerResponse,
  status: number,
  type: string,
  body: string,
  headers: Record<string, string>,
): void {
  res.writeHead(status, { ...headers, 'content-type': type, 'cache-control': 'no-store' });
  res.end(body);
}
