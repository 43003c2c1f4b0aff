// The usage of the TypeScript retry loop in docs/contract.md.
import { callIdempotent } from './callIdempotent.js';

declare const cartId: string;

// ---- verbatim from docs/contract.md ----
const order = await callIdempotent<{ id: string }>(
  'http://127.0.0.1:3000/trpc',
  'acct_alice1.OAZA2JZp2vF6Tb1b8ZOCcp',
  'orders.create',
  { sku: 'tea-sencha', quantity: 2 },
  `order-cart-${cartId}`,
);
await callIdempotent(
  'http://127.0.0.1:3000/trpc',
  'acct_alice1.OAZA2JZp2vF6Tb1b8ZOCcp',
  'payments.create',
  { orderId: order.data.id, amountCents: 1250, currency: 'EUR' },
  `payment-${order.data.id}`,
);
