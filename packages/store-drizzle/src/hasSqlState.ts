/** SQLSTATE 55P03 `lock_not_available`: a lock wait ran out (`lock_timeout`). */
export const LOCK_NOT_AVAILABLE = '55P03';

/**
 * Whether `error`, or an error it wraps, carries the PostgreSQL SQLSTATE `state`. Drizzle wraps
 * driver errors in `DrizzleQueryError` with the driver's error (postgres.js, PGlite) as `cause`.
 */
export function hasSqlState(error: unknown, state: string): boolean {
  let current = error;
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth++) {
    if ('code' in current && current.code === state) return true;
    current = 'cause' in current ? current.cause : undefined;
  }
  return false;
}
