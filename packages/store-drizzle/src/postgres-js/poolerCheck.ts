import postgres from 'postgres';
import { probeWith } from './detectTransactionPooler.js';

/**
 * The start-up error of a postgres.js client that prepares its statements behind a pooler in
 * transaction mode, naming the two settings.
 */
export class PreparedStatementsBehindPoolerError extends Error {
  constructor() {
    super(
      'idem: the database is reached through a pooler in transaction mode (two connections ' +
        'of the client shared a server process), and the postgres.js client prepares its ' +
        'statements. Such a pooler cannot carry prepared statements: statements fail, ' +
        "postgres.js's prepared COMMIT can turn into a silent ROLLBACK, and a client " +
        'connection can wait for an answer that never comes. Open the client with ' +
        'prepare: false (postgres(url, { prepare: false }), or ?prepare=false in the URL) and ' +
        'the store with preparedStatements: false (createPostgresJsStore(db, ' +
        '{ preparedStatements: false })). See docs/operations.md, "Poolers".',
    );
    this.name = 'PreparedStatementsBehindPoolerError';
  }
}

/** The parts of a postgres.js client the check reads: its parsed options. */
interface ClientWithOptions {
  options: Record<string, unknown> & { prepare?: unknown };
}

function hasOptions(client: unknown): client is ClientWithOptions & object {
  const options = (client as Partial<ClientWithOptions> | null)?.options;
  return typeof options === 'object' && options !== null;
}

/** Whether `client` (a Drizzle database's `$client`) prepares its statements. */
export function clientPrepares(client: unknown): client is ClientWithOptions & object {
  return hasOptions(client) && client.options.prepare === true;
}

/**
 * A client of two connections to where `client` connects, with its host, port, database, user,
 * password, TLS and connection parameters, that prepares nothing and reports nothing to the
 * application's callbacks. postgres.js takes a parsed options object (one with `shared`) as it
 * is, so every part the parsing would have filled is given.
 */
function probeClient(client: ClientWithOptions, timeoutMs: number): postgres.Sql {
  return postgres({
    ...client.options,
    max: 2,
    prepare: false,
    debug: false,
    connect_timeout: Math.max(1, Math.ceil(timeoutMs / 1000)),
    onnotice: () => {},
    onnotify: undefined,
    onclose: undefined,
    onparameter: undefined,
    parameters: {},
    shared: { retries: 0, typeArrayMap: {} },
  } as unknown as postgres.Options<Record<string, never>>);
}

/**
 * Whether `client` prepares behind a transaction-mode pooler: `'refuse'` when it does, `'ok'`
 * when it does not prepare or the probe found no such pooler, `'unknown'` when the probe timed
 * out. A probe that cannot connect rejects (an outage: the next call probes again).
 */
export async function checkPooler(
  client: unknown,
  timeoutMs: number,
): Promise<'ok' | 'refuse' | 'unknown'> {
  if (!hasOptions(client) || !clientPrepares(client)) return 'ok';
  const found = await probeWith(probeClient(client, timeoutMs), timeoutMs);
  if (found === 'timeout') return 'unknown';
  return found ? 'refuse' : 'ok';
}

/**
 * Refuses (throws {@link PreparedStatementsBehindPoolerError}) when `client` prepares behind a
 * transaction-mode pooler: what `migrate` runs before it migrates.
 */
export async function assertNoPreparedPooler(client: unknown, timeoutMs: number): Promise<void> {
  if ((await checkPooler(client, timeoutMs)) === 'refuse') {
    throw new PreparedStatementsBehindPoolerError();
  }
}

/** The check of each client, shared by the stores on it: once per client, not per request. */
export interface Gate {
  /** Settles when the check has answered; null once it has. */
  pending: Promise<void> | null;
  /** The refusal, once found: every call of every store on the client rejects with it. */
  refusal: Error | null;
}

const gates = new WeakMap<object, Gate>();

/** The gate of a client that prepares nothing: nothing to check. */
const OPEN: Gate = Object.freeze({ pending: null, refusal: null }) as Gate;

/**
 * The check before a store's first statement on `client`: once per client (the stores on one
 * client share it), awaited by every call that comes before it answers; calls after it cost a
 * property read. A refusal is said once through `onWarning` and rejects every call; a probe that
 * could not connect is run again by the next call (so look the gate up per call: a WeakMap
 * read); one that timed out lets the store run (a
 * pooler that held the probe's second connection waiting is in session mode, where prepared
 * statements work).
 */
export function poolerGate(
  client: unknown,
  timeoutMs: number,
  onWarning: (message: string) => void,
): Gate {
  // A postgres.js client is a function (the tagged template) with properties.
  if (!clientPrepares(client)) return OPEN;
  const existing = gates.get(client);
  if (existing) return existing;
  const gate: Gate = { pending: null, refusal: null };
  const run = (): Promise<void> =>
    checkPooler(client, timeoutMs).then(
      (answer) => {
        gate.pending = null;
        if (answer !== 'refuse') return;
        gate.refusal = new PreparedStatementsBehindPoolerError();
        onWarning(gate.refusal.message);
      },
      () => {
        // Unreachable now: the call goes on and fails as the database does; the next probes.
        gate.pending = null;
        gates.delete(client);
      },
    );
  gate.pending = run();
  gates.set(client, gate);
  return gate;
}

/** Whether a call must wait for (or be refused by) `gate`: false once the check has passed. */
export function closed(gate: Gate): boolean {
  return gate.pending !== null || gate.refusal !== null;
}

/** Waits for `gate`'s check when it has not answered yet, then throws its refusal, if any. */
export async function passGate(gate: Gate): Promise<void> {
  if (gate.pending) await gate.pending;
  if (gate.refusal) throw gate.refusal;
}
