// The intent-key sample of docs/client.md, verbatim between the markers, with the declarations it
// assumes (`trpc` is the client of the Usage sample).
import { trpc } from './usage';

// ---- verbatim from docs/client.md: Keys per user intent ----
import { intentKeys, withIdempotencyKey } from '@idem/client';

const keys = intentKeys(); // sessionStorage: survives a reload of the tab

async function pay(orderId: string, amountCents: number) {
  const intent = `pay:${orderId}`; // what the user means to do once, with the ids that make it unique
  const key = keys.keyFor(intent); // the same key for every click, retry and reload
  const payment = await trpc.payments.charge.mutate({ amountCents }, withIdempotencyKey(key));
  keys.complete(intent, key); // success: the next payment of this intent gets a new key
  return payment;
}
