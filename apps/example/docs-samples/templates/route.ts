// The route handler sample of docs/trpc-templates.md, verbatim between the markers, with the
// declarations it assumes.
import { idemResponseMeta } from '@idem/server';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { createTRPCContext } from './context';
import { appRouter } from './router';

// ---- verbatim from docs/trpc-templates.md: 5. Context: the adapter parameter ----
// app/api/trpc/[trpc]/route.ts
const handler = (req: Request) =>
  fetchRequestHandler({
    endpoint: '/api/trpc',
    router: appRouter,
    req,
    createContext: (opts) => createTRPCContext({ headers: req.headers, idem: opts }),
    responseMeta: idemResponseMeta, // the fetch adapter takes a status (a 202) only from here
  });

export { handler as GET, handler as POST };
// ---- end ----
