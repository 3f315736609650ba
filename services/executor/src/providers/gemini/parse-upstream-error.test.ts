import { describe, expect, it } from 'vitest';
import { providerFixture } from '@gateway/testing';
import { geminiErrorOf, retryDelayOf, streamErrorOf, upstreamErrorFromResponse } from './parse-upstream-error.js';

describe('gemini error parsing', () => {
  it('reads RetryInfo delays as a Duration string or object', () => {
    expect(retryDelayOf(geminiErrorOf(providerFixture('gemini', 'error-429.json')))).toBe(12_000);
    const withDelay = (retryDelay: unknown) => ({ details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay }] }) as never;
    expect(retryDelayOf(withDelay('0.250s'))).toBe(250);
    expect(retryDelayOf(withDelay({ seconds: '2', nanos: 500_000_000 }))).toBe(2500);
    expect(retryDelayOf(withDelay('soon'))).toBeUndefined();
    expect(retryDelayOf(undefined)).toBeUndefined();
  });

  it('reads the envelope bare or inside an array, and keeps no key in the message', () => {
    const key = 'AIzaSyA-0123456789abcdefghijk';
    const body = JSON.stringify([{ error: { code: 400, message: `key ${key} is malformed`, status: 'INVALID_ARGUMENT' } }]);
    const error = upstreamErrorFromResponse('gemini', { status: 400, headers: {}, bodyText: body }, [key]);
    expect(error).toMatchObject({ kind: 'http', status: 400, retryable: false, upstreamMessage: 'key [redacted] is malformed' });
    expect(error.message).not.toContain(key);
    expect(upstreamErrorFromResponse('gemini', { status: 502, headers: {}, bodyText: '<html>Bad Gateway</html>' }, [])).toMatchObject({
      status: 502,
      retryable: true,
      upstreamMessage: undefined,
    });
  });

  it('treats an error record in a stream as retryable unless its code is a client error', () => {
    expect(streamErrorOf('gemini', { code: 500, message: 'internal', status: 'INTERNAL' })).toMatchObject({
      kind: 'stream_error',
      status: 500,
      retryable: true,
    });
    expect(streamErrorOf('gemini', { code: 400, message: 'bad', status: 'INVALID_ARGUMENT' })).toMatchObject({ status: 400, retryable: false });
    expect(streamErrorOf('gemini', { message: 'unknown' })).toMatchObject({ status: undefined, retryable: true });
  });
});
