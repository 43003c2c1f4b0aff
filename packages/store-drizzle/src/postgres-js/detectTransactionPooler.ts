/// <reference types="node" />
import postgres from 'postgres';

/** Options of {@link detectTransactionPooler}. */
export interface DetectTransactionPoolerOptions {
  /** How long the probe may take before it gives up and answers `false`. Defaults to 5 000 ms. */
  timeoutMs?: number;
}

/**
 * Whether `url` reaches PostgreSQL through a pooler that hands one server connection to several
 * clients between transactions (PgBouncer's `pool_mode = transaction` or `statement`, most hosted
 * poolers). Such a pooler cannot carry named prepared statements: a statement prepared on one
 * server connection is missing on the next, and a transaction that meets it fails. Call it at
 * start-up, before opening the application's client, and open that client with
 * `prepare: false` when it answers `true`.
 *
 * The probe opens two connections of its own and asks each, in turn, three times, for its
 * server process id (`pg_backend_pid()`). On a direct connection (or a session-mode pooler) each
 * connection keeps its own server process, so the ids never change and never match. A
 * transaction-mode pooler gives the server process one client just released to the next
 * (PgBouncer reuses the most recently released one), so the two share an id, or one connection's
 * id changes. A pooler that carries prepared statements itself (PgBouncer 1.21 and later with
 * `max_prepared_statements`) is still reported: turning them off is then merely slower.
 * Answers `false` when the probe times out.
 *
 * The postgres.js store runs the same probe on its client's settings before its first statement
 * (see `PostgresJsStoreOptions.poolerProbe`), and `migrate` before it migrates.
 */
export async function detectTransactionPooler(
  url: string,
  options: DetectTransactionPoolerOptions = {},
): Promise<boolean> {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const sql = postgres(url, {
    max: 2,
    prepare: false,
    onnotice: () => {},
    connect_timeout: Math.ceil(timeoutMs / 1000),
  });
  return (await probeWith(sql, timeoutMs)) === true;
}

/**
 * The probe of {@link detectTransactionPooler} on `sql` (a client of two connections or more,
 * which it ends): `'timeout'` when it did not finish within `timeoutMs`. A failure to connect
 * rejects.
 */
export async function probeWith(
  sql: postgres.Sql,
  timeoutMs: number,
): Promise<boolean | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const probe = async (): Promise<boolean> => {
    const first = await sql.reserve();
    const second = await sql.reserve();
    try {
      const pid = async (connection: postgres.ReservedSql) =>
        (await connection<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!.pid;
      const seen: [number[], number[]] = [[], []];
      for (let round = 0; round < 3; round++) {
        seen[0].push(await pid(first));
        seen[1].push(await pid(second));
      }
      const [a, b] = seen.map((ids) => new Set(ids));
      return a!.size > 1 || b!.size > 1 || [...a!].some((id) => b!.has(id));
    } finally {
      first.release();
      second.release();
    }
  };
  const probing = probe();
  probing.catch(() => {}); // read below, unless the timeout answered first
  try {
    return await Promise.race([
      probing,
      new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
    await sql.end({ timeout: 0 });
  }
}
