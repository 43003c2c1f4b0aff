import { describe, expect, it } from 'vitest';
import { attemptHeaders, withAttemptHeaders } from './attemptHeaders.js';

const attempt = attemptHeaders({
  idempotencyKey: 'key-1',
  requestId: 'req-1',
  attempt: 2,
  remainingMs: 1234.9,
});

describe('withAttemptHeaders', () => {
  it("drops the caller's spellings of idem's headers and sends idem's values", () => {
    const merged = withAttemptHeaders(
      {
        authorization: 'Bearer a',
        'idempotency-key': 'theirs',
        'X-REQUEST-ID': 'theirs',
        'Idempotency-Attempt': '9',
        'idempotency-timeout-ms': '1',
        'x-trace': ['a', 'b'],
      },
      attempt,
    );
    expect(merged).toEqual({
      authorization: 'Bearer a',
      'x-trace': ['a', 'b'],
      'Idempotency-Key': 'key-1',
      'X-Request-Id': 'req-1',
      'Idempotency-Attempt': '2',
      'Idempotency-Timeout-Ms': '1234',
    });
  });

  it('reads iterable headers (a Headers instance) the same way', () => {
    const merged = withAttemptHeaders(
      new Headers({ authorization: 'Bearer a', 'Idempotency-Key': 'theirs' }),
      attempt,
    );
    expect(merged).toEqual({ authorization: 'Bearer a', ...attempt });
  });

  it("returns a new object and leaves the caller's untouched", () => {
    const own = { authorization: 'Bearer a', 'Idempotency-Key': 'theirs' };
    const merged = withAttemptHeaders(own, undefined);
    expect(merged).toEqual({ authorization: 'Bearer a' });
    expect(own).toEqual({ authorization: 'Bearer a', 'Idempotency-Key': 'theirs' });
  });
});
