import { TRPCError, type TRPCDefaultErrorShape } from '@trpc/server';
import { getHTTPStatusCodeFromError } from '@trpc/server/http';
import { TRPC_ERROR_CODES_BY_KEY } from '@trpc/server/rpc';
import { describe, expect, it } from 'vitest';
import { idemResponseMeta } from '../request/idemResponseMeta.js';
import { idemErrorFormatter, type MaskedError } from './idemErrorFormatter.js';
import { storeUnavailable } from './idemErrors.js';

/** What tRPC hands a root formatter: its default shape of the error, as in development mode. */
function defaultShape(error: TRPCError): TRPCDefaultErrorShape {
  return {
    message: error.message,
    code: TRPC_ERROR_CODES_BY_KEY[error.code],
    data: {
      code: error.code,
      httpStatus: getHTTPStatusCodeFromError(error),
      path: 'orders.list',
      stack: error.stack,
    },
  };
}

/** An error thrown in a handler, as tRPC turns it into a `TRPCError`. */
function thrown(cause: unknown): TRPCError {
  return new TRPCError({ code: 'INTERNAL_SERVER_ERROR', cause });
}

/** A driver's error with `code`, wrapped the way Drizzle wraps it. */
function driverFailure(code: string): Error {
  const driver = Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code });
  return new Error('Failed query: select * from orders where account = $1', { cause: driver });
}

/** The formatter with its masked errors collected, and a context whose response headers it sets. */
function format(error: TRPCError, options: Parameters<typeof idemErrorFormatter>[0] = {}) {
  const masked: MaskedError[] = [];
  const formatter = idemErrorFormatter({ onMasked: (m) => masked.push(m), ...options });
  const headers = new Map<string, string>();
  const ctx = { idemRequest: { requestId: 'req-1', response: { headers } } };
  const shape = formatter({
    error,
    shape: defaultShape(error),
    ctx,
    path: 'orders.list',
    type: 'query',
  });
  return {
    shape,
    headers,
    masked,
    again: () => formatter({ error, shape: defaultShape(error), ctx }),
  };
}

describe('idemErrorFormatter: an unreachable database', () => {
  it.each(['ECONNREFUSED', 'CONNECTION_CLOSED', 'CONNECT_TIMEOUT', '57P01', '08006'])(
    '%s in the cause chain: 503 SERVICE_UNAVAILABLE, Retry-After, masked with an error id',
    (code) => {
      const error = thrown(driverFailure(code));
      const { shape, headers, masked } = format(error);
      expect(shape.data).toEqual({
        code: 'SERVICE_UNAVAILABLE',
        httpStatus: 503,
        path: 'orders.list',
      });
      expect(shape.code).toBe(TRPC_ERROR_CODES_BY_KEY.SERVICE_UNAVAILABLE);
      expect(shape.message).toMatch(/^Internal server error; error id err_[0-9a-f]{16}$/);
      expect(shape.message).not.toMatch(new RegExp(`${code}|select`));
      expect(headers.get('Retry-After')).toBe('1');
      expect(masked).toHaveLength(1);
      expect(masked[0]).toMatchObject({
        error,
        path: 'orders.list',
        type: 'query',
        requestId: 'req-1',
      });
      expect(shape.message).toContain(masked[0]!.errorId);
    },
  );

  it.each([
    ['a plain Error', new Error('boom')],
    ['a unique violation (the database answered)', driverFailure('23505')],
    ['a serialization failure', driverFailure('40001')],
  ])('%s stays a masked 500 without Retry-After', (_, cause) => {
    const { shape, headers, masked } = format(thrown(cause));
    expect(shape.data).toEqual({
      code: 'INTERNAL_SERVER_ERROR',
      httpStatus: 500,
      path: 'orders.list',
    });
    expect(shape.message).toMatch(/^Internal server error; error id err_/);
    expect(headers.size).toBe(0);
    expect(masked).toHaveLength(1);
  });

  it('a status the handler chose stays: a 400 whose cause is a lost connection is a 400', () => {
    const error = new TRPCError({
      code: 'BAD_REQUEST',
      message: 'bad sku',
      cause: driverFailure('ECONNRESET'),
    });
    const { shape, headers, masked } = format(error);
    expect(shape).toMatchObject({
      message: 'bad sku',
      data: { code: 'BAD_REQUEST', httpStatus: 400 },
    });
    expect(headers.size).toBe(0);
    expect(masked).toEqual([]);
  });

  it("idem's own 503 keeps its message and data.idem", () => {
    const error = storeUnavailable(driverFailure('ECONNREFUSED'));
    const { shape, masked } = format(error);
    expect(shape.data.idem?.reason).toBe('IDEMPOTENCY_STORE_UNAVAILABLE');
    expect(shape.message).toMatch(/idempotency store is unavailable/);
    expect(masked).toEqual([]);
  });

  it('formatted twice (tRPC may), one error id and one report', () => {
    const { shape, masked, again } = format(thrown(driverFailure('ECONNREFUSED')));
    expect(again().message).toBe(shape.message);
    expect(masked).toHaveLength(1);
  });

  it('unavailableRetryAfterMs sets the wait in whole seconds, at least 1; mask sees 503', () => {
    const statuses: number[] = [];
    const mask = (_: TRPCError, status: number) => (statuses.push(status), true);
    const error = () => thrown(driverFailure('ECONNREFUSED'));
    expect(
      format(error(), { unavailableRetryAfterMs: 2500, mask }).headers.get('Retry-After'),
    ).toBe('3');
    expect(format(error(), { unavailableRetryAfterMs: 0 }).headers.get('Retry-After')).toBe('1');
    expect(statuses).toEqual([503]);
    expect(() => idemErrorFormatter({ unavailableRetryAfterMs: -1 })).toThrow(
      /unavailableRetryAfterMs/,
    );
    expect(() => idemErrorFormatter({ unavailableRetryAfterMs: Number.NaN })).toThrow(TypeError);
  });

  it('idemResponseMeta sets that Retry-After when there is no context (createContext failed)', () => {
    const unreachable = thrown(driverFailure('CONNECTION_DESTROYED'));
    const formatter = idemErrorFormatter({ onMasked: () => {}, unavailableRetryAfterMs: 2000 });
    formatter({ error: unreachable, shape: defaultShape(unreachable) });
    expect(idemResponseMeta({ errors: [unreachable] }).headers?.get('Retry-After')).toBe('2');
    const plain = thrown(new Error('boom'));
    formatter({ error: plain, shape: defaultShape(plain) });
    expect(idemResponseMeta({ errors: [plain] })).toEqual({});
    // Not formatted by idemErrorFormatter: idemResponseMeta does not classify on its own.
    expect(idemResponseMeta({ errors: [thrown(driverFailure('ECONNREFUSED'))] })).toEqual({});
  });
});
