/**
 * Input `adminCommands` refuses before anything is read or written: a resolution a replay could
 * not use or without the procedure's windows, a key without the app's secret, an unknown
 * operation id; and a command line `idem-admin` refuses before opening the database. Its message
 * is one line saying what to give instead; `idem-admin` prints it as a usage error (exit 2). A
 * `TypeError`, branded, so the check survives two installed copies of this package.
 */
export class AdminInputError extends TypeError {
  readonly isAdminInputError = true;
  constructor(message: string) {
    super(message);
    this.name = 'AdminInputError';
  }
}

/** True for an {@link AdminInputError}, from any copy of this package. */
export function isAdminInputError(value: unknown): value is AdminInputError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { isAdminInputError?: unknown }).isAdminInputError === true
  );
}
