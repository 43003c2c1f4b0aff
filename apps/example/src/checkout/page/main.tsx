/**
 * The checkout page: React, TanStack Query and tRPC's integration, with `@idem/client`'s link
 * (every attempt recorded for the page) and `@idem/react`'s intent keys. Bundled by esbuild
 * (see ../checkoutPage.ts).
 */
import { idemFetch, idemLink } from '@idem/client';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { createTRPCClient, httpBatchLink } from '@trpc/client';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import type { AppRouter } from '../../createAppRouter.js';
import type { CheckoutConfig } from '../checkoutPage.js';
import { AttemptLog } from './AttemptLog.js';
import { CheckoutPage } from './CheckoutPage.js';
import { demoToken } from './SignIn.js';
import { TRPCProvider } from './trpc.js';

const config = JSON.parse(
  document.getElementById('checkout-config')!.textContent!,
) as CheckoutConfig;
const apiUrl = new URL(config.apiUrl, location.href).href;
// Read at every request: the token the user signed in with, from this tab's storage.
const headers = (): Record<string, string> => {
  const token = demoToken.read();
  return token ? { authorization: `Bearer ${token}` } : {};
};

// The fault switches' secret came in the HTML, which only this origin can read.
const faults = config.devSecret
  ? { url: `${new URL(apiUrl).origin}/dev/faults`, secret: config.devSecret }
  : null;

const attempts = new AttemptLog();
const trpcClient = createTRPCClient<AppRouter>({
  links: [
    idemLink<AppRouter>({
      http: { url: apiUrl, headers, fetch: attempts.fetch((input, init) => fetch(input, init)) },
      idempotent: { 'orders.create': true, 'payments.create': true },
      // A 503 burst of 3 and a second click share these: room for both to get through.
      maxAttempts: 5,
    }),
    httpBatchLink({ url: apiUrl, headers, fetch: idemFetch() }),
  ],
});
// idem retries; TanStack Query must not retry on top of it.
const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false } } });

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        <CheckoutPage attempts={attempts} faults={faults} apiOrigin={new URL(apiUrl).origin} />
      </TRPCProvider>
    </QueryClientProvider>
  </StrictMode>,
);
