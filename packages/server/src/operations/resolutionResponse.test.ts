import { describe, expect, it } from 'vitest';
import { checkResolution, type ResolutionRequest } from './resolutionResponse.js';

const failure = (code: string) => JSON.stringify({ code, message: 'no such charge' });

describe('checkResolution', () => {
  it.each<[string, ResolutionRequest, { status: number; body: string } | null]>([
    [
      'an output',
      { state: 'COMPLETED', body: '{"chargeId":"ch_9"}' },
      { status: 200, body: '{"chargeId":"ch_9"}' },
    ],
    [
      'an output, status 200',
      { state: 'COMPLETED', status: 200, body: '[1,2]' },
      { status: 200, body: '[1,2]' },
    ],
    ['no output (undefined)', { state: 'COMPLETED', body: '' }, { status: 200, body: '' }],
    [
      'a 404 failure',
      { state: 'TERMINAL_FAILURE', body: failure('NOT_FOUND') },
      { status: 404, body: failure('NOT_FOUND') },
    ],
    [
      'a 412 failure with its status',
      { state: 'TERMINAL_FAILURE', status: 412, body: failure('PRECONDITION_FAILED') },
      { status: 412, body: failure('PRECONDITION_FAILED') },
    ],
    ['a release', { state: 'RETRYABLE_FAILURE' }, null],
  ])('accepts %s', (_name, request, response) => {
    expect(checkResolution(request)).toEqual({ ok: true, response });
  });

  it.each<[string, ResolutionRequest, RegExp]>([
    ['a completion without body', { state: 'COMPLETED' }, /--body is required for COMPLETED/],
    [
      'a completion that is not JSON',
      { state: 'COMPLETED', body: 'ch_9' },
      /output as its serializer writes it/,
    ],
    [
      'a completion with status 201',
      { state: 'COMPLETED', status: 201, body: '{}' },
      /replays with status 200/,
    ],
    [
      'a stored reference',
      { state: 'COMPLETED', body: 'idem:ref:{"id":1}' },
      /not a stored reference/,
    ],
    [
      'a free-form failure',
      { state: 'TERMINAL_FAILURE', status: 402, body: '{"error":"declined"}' },
      /\{"code":"<tRPC error code>","message":"..."\}/,
    ],
    [
      'a failure with extra fields',
      { state: 'TERMINAL_FAILURE', body: '{"code":"NOT_FOUND","message":"x","stack":"..."}' },
      /must be \{"code"/,
    ],
    [
      'an unknown code',
      { state: 'TERMINAL_FAILURE', body: failure('DECLINED') },
      /must be \{"code"/,
    ],
    [
      'a 5xx failure',
      { state: 'TERMINAL_FAILURE', body: failure('INTERNAL_SERVER_ERROR') },
      /answers 500; use a 4xx code/,
    ],
    [
      'a status the replay would ignore',
      { state: 'TERMINAL_FAILURE', status: 402, body: failure('NOT_FOUND') },
      /replays with status 404: drop --status or give 404, not 402/,
    ],
    [
      'a failure without body',
      { state: 'TERMINAL_FAILURE' },
      /--body is required for TERMINAL_FAILURE/,
    ],
    [
      'a release with a body',
      { state: 'RETRYABLE_FAILURE', body: '{}' },
      /takes no --status or --body/,
    ],
    [
      'a status that is not one',
      { state: 'COMPLETED', status: Number('abc'), body: '{}' },
      /must be an HTTP status/,
    ],
  ])('refuses %s, saying why', (_name, request, message) => {
    const checked = checkResolution(request);
    expect(checked.ok).toBe(false);
    expect(!checked.ok && checked.message).toMatch(message);
  });
});
