import { describe, expect, it } from 'vitest';
import { fixture } from '@gateway/testing';
import { errorMessageOf, parseRetryAfter, scrubSecrets, upstreamErrorFromResponse, upstreamErrorFromTransport } from './parse-upstream-error.js';

describe('parseRetryAfter', () => {
  it('prefers retry-after-ms, then retry-after in seconds or as an HTTP date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter({ 'retry-after-ms': '250.5', 'retry-after': '9' }, now)).toBe(251);
    expect(parseRetryAfter({ 'retry-after': '2' }, now)).toBe(2000);
    expect(parseRetryAfter({ 'retry-after': 'Thu, 01 Jan 2026 00:00:05 GMT' }, now)).toBe(5000);
    expect(parseRetryAfter({ 'retry-after': 'soon' }, now)).toBeUndefined();
    expect(parseRetryAfter({}, now)).toBeUndefined();
  });
});

describe('upstream error parsing', () => {
  it("reads OpenAI's error.message and scrubs our secrets from it", () => {
    expect(errorMessageOf(fixture('error-400.json'))).toBe("Invalid value for 'temperature': must be between 0 and 2.");
    expect(errorMessageOf('<html>Bad gateway</html>')).toBeUndefined();
    expect(scrubSecrets('key sk-live-abcdefgh1234 leaked', ['sk-live-abcdefgh1234'])).toBe('key [redacted] leaked');
    const error = upstreamErrorFromResponse('openai-compatible', { status: 429, headers: { 'retry-after': '1' }, bodyText: fixture('error-429.json') }, []);
    expect(error).toMatchObject({ kind: 'http', status: 429, retryable: true, retryAfterMs: 1000 });
  });

  it("classifies undici's timeouts as timeouts and anything else as a connection failure", () => {
    expect(upstreamErrorFromTransport('openai-compatible', Object.assign(new Error('t'), { code: 'UND_ERR_HEADERS_TIMEOUT' }), 'request')).toMatchObject({
      kind: 'timeout',
      message: 'upstream first-byte timeout',
    });
    expect(upstreamErrorFromTransport('openai-compatible', Object.assign(new Error('t'), { code: 'UND_ERR_CONNECT_TIMEOUT' }), 'request')).toMatchObject({
      kind: 'timeout',
      message: 'upstream connect timeout',
    });
    expect(upstreamErrorFromTransport('openai-compatible', Object.assign(new Error('r'), { code: 'ECONNREFUSED' }), 'request')).toMatchObject({
      kind: 'connection',
      retryable: true,
    });
  });
});
