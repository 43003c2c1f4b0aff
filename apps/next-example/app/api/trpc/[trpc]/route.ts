import { idemResponseMeta } from '@idem/server';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { appRouter } from '../../../../src/server/router';
import { createTRPCContext } from '../../../../src/server/trpc';

export const dynamic = 'force-dynamic';

const handler = (req: Request) =>
  fetchRequestHandler({
    endpoint: '/api/trpc',
    router: appRouter,
    req,
    // The adapter's options go to idem: it writes its headers into `resHeaders` itself.
    createContext: (opts) => createTRPCContext({ headers: req.headers, idem: opts }),
    // The fetch adapter takes a status only from here (idem's 202 for accepted work).
    responseMeta: idemResponseMeta,
  });

export { handler as GET, handler as POST };
