'use client';

import { idemFetch, idemLink } from '@idem/client';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { createTRPCClient, httpBatchStreamLink } from '@trpc/client';
import { createTRPCContext } from '@trpc/tanstack-react-query';
import { useState, type ReactNode } from 'react';
import superjson from 'superjson';
import type { AppRouter } from '../server/router';

export const { TRPCProvider, useTRPC } = createTRPCContext<AppRouter>();

const url = '/api/trpc';
const headers = () => ({ 'x-trpc-source': 'nextjs-react' });

function makeClient() {
  return createTRPCClient<AppRouter>({
    links: [
      // Before the terminating link: idem sends each idempotent mutation alone, with its key,
      // and retries it; everything else goes on to the batch stream link, batched as before.
      idemLink<AppRouter>({
        http: { url, headers, transformer: superjson },
        idempotent: { 'post.create': true },
      }),
      httpBatchStreamLink({ url, headers, transformer: superjson, fetch: idemFetch() }),
    ],
  });
}

export function TRPCReactProvider({ children }: { children: ReactNode }) {
  // idem retries queries itself: TanStack Query's own query retries would multiply them.
  const [queryClient] = useState(
    () => new QueryClient({ defaultOptions: { queries: { retry: false, staleTime: 1_000 } } }),
  );
  const [trpcClient] = useState(makeClient);
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        {children}
      </TRPCProvider>
    </QueryClientProvider>
  );
}
