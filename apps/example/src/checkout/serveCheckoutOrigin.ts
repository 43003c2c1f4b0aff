/**
 * `pnpm checkout-origin`: the checkout page alone, on an origin of its own (PORT, default 3001),
 * calling the API on another origin (IDEM_EXAMPLE_API_URL, default http://127.0.0.1:3000/trpc)
 * through CORS. Start the API with IDEM_EXAMPLE_CORS_ORIGINS=http://127.0.0.1:3001. For the
 * fault switches, IDEM_EXAMPLE_DEV_SECRET: the secret the API printed at start-up.
 */
import { startCheckoutOrigin } from './checkoutPage.js';
import { assertDevSecret } from './faultControl.js';

const port = Number(process.env.PORT || 3001);
const apiUrl = process.env.IDEM_EXAMPLE_API_URL || 'http://127.0.0.1:3000/trpc';
const devSecret = process.env.IDEM_EXAMPLE_DEV_SECRET || undefined;
if (devSecret !== undefined) assertDevSecret(devSecret, 'IDEM_EXAMPLE_DEV_SECRET');
const served = await startCheckoutOrigin(port, apiUrl, devSecret);
process.stdout.write(
  `checkout page on ${served.origin}/ (sign in with the token of pnpm demo-token acct_alice1), calling ${apiUrl}\n` +
    `(the API needs IDEM_EXAMPLE_CORS_ORIGINS=${served.origin}; ` +
    `fault switches ${devSecret ? 'on' : 'off: IDEM_EXAMPLE_DEV_SECRET=<the secret the API printed> turns them on'})\n`,
);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void served.close().then(() => process.exit(0)));
}
