// The "Errors, batches and limits" sample of docs/server.md, verbatim between the markers, with
// the declarations it assumes.
import type { IncomingMessage } from 'node:http';
import type { IdemMeta } from '@idem/contract';
import { idemContext, idemErrorFormatter, idemResponseMeta, type IdemContext } from '@idem/server';
import { initTRPC } from '@trpc/server';
import { createHTTPServer } from '@trpc/server/adapters/standalone';

type Context = IdemContext & { accountId: string | null };
declare const logger: { error(record: object): void };
declare function authenticate(req: IncomingMessage): string | null;

// ---- verbatim from docs/server.md ----
const t = initTRPC
  .context<Context>()
  .meta<IdemMeta>()
  .create({
    isDev: false, // no stack traces in responses
    errorFormatter: idemErrorFormatter({
      // the caller gets "Internal server error; error id err_..."; your log gets the rest
      onMasked: ({ errorId, path, requestId, error }) =>
        logger.error({ errorId, path, requestId, error }),
    }),
  });
const appRouter = t.router({/* ... */});

createHTTPServer({
  router: appRouter,
  // with `info`, a batch that calls an idempotent mutation is refused whole, before anything runs
  createContext: ({ req, info }) => ({ ...idemContext(req, info), accountId: authenticate(req) }),
  responseMeta: idemResponseMeta,
  maxBodySize: 1024 * 1024, // 413 above 1 MiB, counted while the body streams in
}).listen(3000);
