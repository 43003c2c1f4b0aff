import { describe, expect, it } from 'vitest';
import { isDatabaseUnreachable } from './isDatabaseUnreachable.js';

/** An error with a code, wrapped the way Drizzle and tRPC wrap a driver's error. */
function wrapped(code: string): Error {
  const driver = Object.assign(new Error('driver'), { code });
  const drizzle = new Error('Failed query', { cause: driver });
  return new Error('handler failed', { cause: drizzle });
}

describe('isDatabaseUnreachable', () => {
  it.each([
    'CONNECTION_CLOSED',
    'CONNECTION_ENDED',
    'CONNECTION_DESTROYED',
    'CONNECT_TIMEOUT',
    'ECONNREFUSED',
    'ECONNRESET',
    '57P01',
    '57P02',
    '57P03',
    '57014',
    '08006',
    '08001',
  ])('%s, however deeply wrapped, is the database gone', (code) => {
    expect(isDatabaseUnreachable(wrapped(code))).toBe(true);
    expect(isDatabaseUnreachable(Object.assign(new Error('x'), { code }))).toBe(true);
  });

  it.each(['23505', '40001', '55P03', '22P02', 'ERR_SOMETHING', '0800', '080000'])(
    '%s is not: the database answered',
    (code) => {
      expect(isDatabaseUnreachable(wrapped(code))).toBe(false);
    },
  );

  it.each([
    'Connection terminated unexpectedly',
    'Client has encountered a connection error and is not queryable',
    'Connection terminated due to connection timeout',
    'timeout exceeded when trying to connect',
    'Query read timeout',
  ])('node-postgres: "%s", wrapped by Drizzle, is the database gone', (message) => {
    const drizzle = new Error('Failed query', { cause: new Error(message) });
    expect(isDatabaseUnreachable(new Error('handler failed', { cause: drizzle }))).toBe(true);
  });

  it("a message like node-postgres's but not the same, or with a code of the database, is not", () => {
    expect(isDatabaseUnreachable(new Error('Connection terminated unexpectedly!'))).toBe(false);
    const answered = Object.assign(new Error('Connection terminated unexpectedly'), {
      code: '23505',
    });
    expect(isDatabaseUnreachable(answered)).toBe(false);
  });

  it('an error without a code, or not an error, is not', () => {
    expect(isDatabaseUnreachable(new Error('x'))).toBe(false);
    expect(isDatabaseUnreachable(undefined)).toBe(false);
    expect(isDatabaseUnreachable('ECONNREFUSED')).toBe(false);
  });
});
