import { useIntentKey } from '@idem/react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState, useSyncExternalStore } from 'react';
import type { AttemptLog, AttemptRow } from './AttemptLog.js';
import { demoToken, SignIn } from './SignIn.js';
import { useTRPC } from './trpc.js';

const CART = { sku: 'idem-mug', quantity: 1 } as const;
const PRICE = { amountCents: 1250, currency: 'EUR' } as const;
const ORDER_ENTRY = 'checkout:order';

interface FaultState {
  dropNext: number;
  burst503: number;
  slowProcessor: boolean;
}

/** Where the fault switches are, and the secret they want (`X-Idem-Dev-Secret`). */
export interface FaultControl {
  url: string;
  secret: string;
}

export interface CheckoutPageProps {
  attempts: AttemptLog;
  /** Null when the page was given no dev secret: the switches are off. */
  faults: FaultControl | null;
  apiOrigin: string;
}

/** Sign in with a demo token, then the checkout. */
export function CheckoutPage(props: CheckoutPageProps) {
  const queryClient = useQueryClient();
  const [signedIn, setSignedIn] = useState(() => demoToken.read() !== null);
  if (!signedIn) return <SignIn onSignedIn={() => setSignedIn(true)} />;
  const onSignOut = () => {
    demoToken.forget();
    sessionStorage.removeItem(ORDER_ENTRY);
    queryClient.clear();
    setSignedIn(false);
  };
  return <Checkout {...props} onSignOut={onSignOut} />;
}

/** Create an order, pay for it, and watch every attempt: key, attempt, outcome. */
function Checkout({
  attempts,
  faults,
  apiOrigin,
  onSignOut,
}: CheckoutPageProps & { onSignOut: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  // The order of this checkout survives a reload of the tab, as the intent keys do.
  const [orderId, setOrderId] = useState(() => sessionStorage.getItem(ORDER_ENTRY));
  const createIntent = useIntentKey('create-order');
  const payIntent = useIntentKey(orderId ? `pay:${orderId}` : null);
  const refresh = () => void queryClient.invalidateQueries();

  const createOrder = useMutation(
    trpc.orders.create.mutationOptions(
      createIntent.key ? { trpc: { context: { idempotencyKey: createIntent.key } } } : {},
    ),
  );
  const pay = useMutation(
    trpc.payments.create.mutationOptions(
      payIntent.key ? { trpc: { context: { idempotencyKey: payIntent.key } } } : {},
    ),
  );
  const stats = useQuery(trpc.processor.stats.queryOptions());
  const orders = useQuery(trpc.orders.list.queryOptions());

  const onCreate = () => {
    const key = createIntent.key!;
    createOrder.mutate(CART, {
      onSuccess: (order) => {
        createIntent.complete(key);
        sessionStorage.setItem(ORDER_ENTRY, order.id);
        setOrderId(order.id);
      },
      onSettled: refresh,
    });
  };
  // Not disabled while pending: a second click sends the same key, and idem answers it once.
  const onPay = () => {
    const key = payIntent.key!;
    pay.mutate(
      { orderId: orderId!, ...PRICE },
      { onSuccess: () => payIntent.complete(key), onSettled: refresh },
    );
  };
  const onNewCheckout = () => {
    sessionStorage.removeItem(ORDER_ENTRY);
    setOrderId(null);
    createOrder.reset();
    pay.reset();
  };

  return (
    <main>
      <h1>idem checkout</h1>
      <p className="note">
        API {apiOrigin}
        {apiOrigin === location.origin ? ' (same origin)' : ' (another origin: CORS)'} ·{' '}
        <button className="link" data-testid="sign-out" onClick={onSignOut}>
          sign out
        </button>
      </p>
      {orders.error?.data?.code === 'UNAUTHORIZED' && (
        <p className="error" data-testid="token-refused">
          The server refused this token (signed with another secret?): sign out and paste another.
        </p>
      )}
      <section className="card">
        <h2>1. Order</h2>
        <p>
          1 × idem mug, 12.50 EUR · key <Key value={createIntent.key} testId="create-key" />
        </p>
        <button data-testid="create-order" onClick={onCreate} disabled={orderId !== null}>
          Create order
        </button>{' '}
        <span data-testid="order-id">{orderId ?? 'no order yet'}</span>
        {createOrder.error && <p className="error">{createOrder.error.message}</p>}
      </section>
      <section className="card">
        <h2>2. Payment</h2>
        <p>
          key <Key value={payIntent.key} testId="pay-key" />
        </p>
        <button data-testid="pay" onClick={onPay} disabled={!orderId || !payIntent.key}>
          Pay 12.50 EUR
        </button>{' '}
        <span data-testid="pay-result">
          {pay.isPending
            ? 'paying…'
            : pay.data
              ? `${pay.data.status}, charge ${pay.data.chargeId}`
              : pay.error
                ? `failed: ${pay.error.message}`
                : ''}
        </span>{' '}
        {orderId && (
          <button className="link" data-testid="new-checkout" onClick={onNewCheckout}>
            new checkout
          </button>
        )}
      </section>
      <FaultSwitches control={faults} attempts={attempts} />
      <section className="card">
        <h2>Server counts</h2>
        <p data-testid="counts">
          orders {orders.data?.length ?? '–'} · processor charge calls{' '}
          {stats.data?.chargeCalls ?? '–'} · charges {stats.data?.charges ?? '–'}
        </p>
      </section>
      <Attempts log={attempts} />
    </main>
  );
}

function Key({ value, testId }: { value: string | null; testId: string }) {
  return (
    <code data-testid={testId} data-key={value ?? ''} title={value ?? ''}>
      {value ? `${value.slice(0, 8)}…` : '–'}
    </code>
  );
}

const OUTCOME_TEXT: Record<AttemptRow['outcome'], string> = {
  sending: 'in flight…',
  ok: 'done',
  replayed: 'answered from the stored result',
  'in-progress': 'still running, wait',
  unavailable: 'unavailable, retry',
  error: 'error',
  'connection-lost': 'connection lost, retry',
  aborted: 'aborted',
};

function Attempts({ log }: { log: AttemptLog }) {
  const rows = useSyncExternalStore(log.subscribe, log.rows);
  return (
    <section className="card">
      <h2>Attempts</h2>
      <table>
        <thead>
          <tr>
            <th>procedure</th>
            <th>key</th>
            <th>attempt</th>
            <th>status</th>
            <th>outcome</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr
              key={row.id}
              data-testid="attempt"
              data-path={row.path}
              data-key={row.key}
              data-attempt={row.attempt}
              data-outcome={row.outcome}
              data-retry-after={row.retryAfter ?? ''}
              className={row.outcome}
            >
              <td>{row.path}</td>
              <td>
                <code title={row.key}>{row.key.slice(0, 8)}…</code>
              </td>
              <td>{row.attempt}</td>
              <td>{row.status ?? '–'}</td>
              <td>
                {OUTCOME_TEXT[row.outcome]}
                {row.outcome === 'replayed' ? ' (Idempotent-Replayed: true)' : ''}
                {row.retryAfter ? ` (Retry-After ${row.retryAfter} s)` : ''}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

/**
 * The server's fault switches, when it serves them (IDEM_EXAMPLE_DEV_CONTROLS=1) and the page
 * has its dev secret, read again after every attempt (a drop or a 503 uses one up).
 */
function FaultSwitches({
  control,
  attempts,
}: {
  control: FaultControl | null;
  attempts: AttemptLog;
}) {
  const [state, setState] = useState<FaultState | null | 'off'>(control ? null : 'off');
  const rows = useSyncExternalStore(attempts.subscribe, attempts.rows);
  useEffect(() => {
    if (!control) return;
    fetch(control.url, { headers: { 'x-idem-dev-secret': control.secret } }).then(
      async (response) => setState(response.ok ? ((await response.json()) as FaultState) : 'off'),
      () => setState('off'),
    );
  }, [control, rows]);
  const change = async (body: Partial<FaultState>) => {
    const response = await fetch(control!.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-idem-dev-secret': control!.secret },
      body: JSON.stringify(body),
    });
    setState(response.ok ? ((await response.json()) as FaultState) : 'off');
  };
  if (state === null) return null;
  if (state === 'off') {
    return (
      <section className="card note">
        Fault switches unavailable: the server has them off (IDEM_EXAMPLE_DEV_CONTROLS=1 turns them
        on), this page was not given their secret, or the server does not allow this origin.
      </section>
    );
  }
  return (
    <section className="card" data-testid="faults">
      <h2>Faults</h2>
      <button data-testid="drop-next" onClick={() => void change({ dropNext: 1 })}>
        Drop the next response
      </button>{' '}
      <button data-testid="burst-503" onClick={() => void change({ burst503: 3 })}>
        503 burst (next 3 requests)
      </button>{' '}
      <label>
        <input
          type="checkbox"
          data-testid="slow-processor"
          checked={state.slowProcessor}
          onChange={(event) => void change({ slowProcessor: event.target.checked })}
        />{' '}
        slow processor
      </label>
      <p className="note" data-testid="fault-state">
        armed: drop {state.dropNext} · 503 {state.burst503} · processor{' '}
        {state.slowProcessor ? 'slow' : 'normal'}
      </p>
    </section>
  );
}
