/**
 * idem's middleware carries a mark, so the router audit can find it in a procedure's middleware
 * list and check where it sits (after every input parser, before every output parser, on a
 * mutation). tRPC marks its own parsers the same way (`_type: 'input'`, `_type: 'output'`).
 */
const IDEM_MIDDLEWARE = Symbol.for('@idem/server:middleware');

export function markIdemMiddleware<T extends object>(middleware: T): T {
  Object.defineProperty(middleware, IDEM_MIDDLEWARE, { value: true });
  return middleware;
}

export function isIdemMiddleware(middleware: unknown): boolean {
  return (
    typeof middleware === 'function' &&
    (middleware as unknown as Record<symbol, unknown>)[IDEM_MIDDLEWARE] === true
  );
}

/** Whether a middleware is one of tRPC's input parsers (`.input()`). */
export function isInputParser(middleware: unknown): boolean {
  return typeof middleware === 'function' && (middleware as { _type?: unknown })._type === 'input';
}

/** Whether a middleware is one of tRPC's output parsers (`.output()`). */
export function isOutputParser(middleware: unknown): boolean {
  return typeof middleware === 'function' && (middleware as { _type?: unknown })._type === 'output';
}
