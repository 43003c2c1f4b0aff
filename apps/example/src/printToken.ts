/**
 * Prints the demo bearer token of an account: `pnpm demo-token acct_alice1`. Signed with
 * `IDEM_EXAMPLE_TOKEN_SECRET` when set, as the server does (see readConfig.ts).
 */
import { tokenFor } from './createContext.js';

const account = process.argv[2];
if (!account) {
  process.stderr.write('usage: pnpm demo-token acct_<letters and digits>\n');
  process.exit(2);
}
process.stdout.write(`${tokenFor(account, process.env.IDEM_EXAMPLE_TOKEN_SECRET || undefined)}\n`);
