/** SQLSTATE 23505 `unique_violation`. */
export const UNIQUE_VIOLATION = '23505';

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

/**
 * Whether `error` (or an error it wraps) is a unique violation of the constraint or unique index
 * `name`: postgres.js names it `constraint_name`, PGlite and node-postgres `constraint`.
 */
export function violates(error: unknown, name: string): boolean {
  let current = error;
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth++) {
    const e = current as { code?: unknown; constraint_name?: unknown; constraint?: unknown };
    if (e.code === UNIQUE_VIOLATION) return e.constraint_name === name || e.constraint === name;
    current = 'cause' in current ? current.cause : undefined;
  }
  return false;
}
