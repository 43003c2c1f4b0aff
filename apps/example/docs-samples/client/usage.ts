// The TypeScript sample of docs/client.md, verbatim between the markers, with the declarations
// it assumes (`../server/router` is docs-samples/server/router.ts).

declare const session: { token: string };
declare const invoice: { id: string };
declare const input: { amountCents: number };

// ---- verbatim from docs/client.md: Usage ----
import { createTRPCClient, httpBatchLink, loggerLink } from '@trpc/client';
import { idemFetch, idemLink, withIdempotencyKey } from '@idem/client';
import type { AppRouter } from '../server/router';

const url = 'https://api.example.com/trpc';
const headers = () => ({ authorization: `Bearer ${session.token}` });

export const trpc = createTRPCClient<AppRouter>({
  links: [
    loggerLink(), // links before idem see every call once, not every attempt
    idemLink<AppRouter>({
      http: { url, headers }, // tRPC httpLink options; add `transformer` if your router has one
      idempotent: {
        'orders.create': { key: (input) => `order-confirm-${input.cartId}` },
        'payments.charge': true,
      },
    }),
    httpBatchLink({ url, headers, fetch: idemFetch() }),
  ],
});

await trpc.payments.charge.mutate(input, withIdempotencyKey(`charge-${invoice.id}`));
