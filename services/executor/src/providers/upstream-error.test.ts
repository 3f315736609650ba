import { describe, expect, it } from 'vitest';
import { classifyFailure, UpstreamError } from './upstream-error.js';

describe('classifyFailure', () => {
  it.each([
    ['connection', undefined, 'unavailable'],
    ['timeout', undefined, 'unavailable'],
    ['http', 500, 'unavailable'],
    ['http', 502, 'unavailable'],
    ['http', 503, 'unavailable'],
    ['http', 529, 'unavailable'],
    ['http', 429, 'unavailable'],
    ['stream_error', 529, 'unavailable'],
    ['stream_error', 429, 'unavailable'],
    ['http', 400, 'caller'],
    ['http', 413, 'caller'],
    ['http', 422, 'caller'],
    ['stream_error', 400, 'caller'],
    ['http', 401, 'unusable'],
    ['http', 403, 'unusable'],
    ['http', 404, 'unusable'],
    ['http', 408, 'unusable'],
    ['http', 418, 'unusable'],
    ['stream_error', undefined, 'unusable'],
    ['malformed', 200, 'unusable'],
    ['truncated', 200, 'unusable'],
  ] as const)('classifies %s %s as %s', (kind, status, expected) => {
    expect(classifyFailure(kind, status)).toBe(expected);
    expect(new UpstreamError('test failure', { provider: 'openai-compatible', kind, status }).failureClass).toBe(expected);
  });

  it('lets the adapter say what kind and status cannot (a connection dropped after the headers)', () => {
    expect(new UpstreamError('dropped', { provider: 'openai-compatible', kind: 'connection', failureClass: 'unusable' }).failureClass).toBe('unusable');
  });
});
