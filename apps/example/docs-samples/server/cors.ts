// The CORS sample of docs/server.md, verbatim between the markers, with the declarations it
// assumes.
import { createHTTPServer } from '@trpc/server/adapters/standalone';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import type { IdemContext } from '@idem/server';
import { appRouter as router } from './router';

declare const createContext: () => IdemContext & { accountId: string };

// ---- verbatim from docs/server.md: Browsers on another origin (CORS) ----
import { idemCors } from '@idem/server';

const cors = idemCors({
  origins: ['https://shop.example.com'], // exactly as browsers send Origin: no path, no slash
  allowHeaders: ['Authorization'], // your own request headers, besides idem's
});

// standalone, node-http: a connect-style middleware (express: app.use(cors.middleware))
createHTTPServer({ router, createContext, middleware: cors.middleware });

// fetch adapter (workers, Deno, Bun, Next route handlers): wrap the handler
export default {
  fetch: cors.fetch((req: Request) =>
    fetchRequestHandler({ endpoint: '/trpc', req, router, createContext }),
  ),
};
