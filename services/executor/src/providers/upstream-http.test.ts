import { describe, expect, it } from 'vitest';
import { upstreamErrorFromTransport, upstreamUrl } from './upstream-http.js';

describe('upstreamUrl', () => {
  it('adds the version segment unless the base_url already ends with it, keeping a proxy path and query', () => {
    expect(upstreamUrl('https://api.anthropic.com', 'v1', 'messages').href).toBe('https://api.anthropic.com/v1/messages');
    expect(upstreamUrl('https://api.anthropic.com/v1/', 'v1', 'messages').href).toBe('https://api.anthropic.com/v1/messages');
    expect(upstreamUrl('https://proxy.example.com/anthropic', 'v1', 'messages').href).toBe('https://proxy.example.com/anthropic/v1/messages');
    expect(upstreamUrl('https://generativelanguage.googleapis.com', 'v1beta', 'models/gemini-2.0-flash:generateContent').href).toBe(
      'https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent',
    );
    expect(upstreamUrl('https://gateway.example.com/google/v1beta?project=7', 'v1beta', 'models/gemini-2.5-pro:streamGenerateContent').href).toBe(
      'https://gateway.example.com/google/v1beta/models/gemini-2.5-pro:streamGenerateContent?project=7',
    );
  });
});

describe('upstreamErrorFromTransport', () => {
  it.each([
    ['ECONNREFUSED', 'request', 'connection', 'unavailable'],
    ['ECONNRESET', 'request', 'connection', 'unavailable'],
    ['ENOTFOUND', 'request', 'connection', 'unavailable'],
    ['UND_ERR_CONNECT_TIMEOUT', 'request', 'timeout', 'unavailable'],
    ['UND_ERR_HEADERS_TIMEOUT', 'request', 'timeout', 'unavailable'],
    ['ECONNRESET', 'body', 'connection', 'unusable'],
    ['UND_ERR_BODY_TIMEOUT', 'body', 'timeout', 'unusable'],
  ] as const)('%s during the %s is a retryable %s failure of class %s', (code, phase, kind, failureClass) => {
    const error = upstreamErrorFromTransport('openai-compatible', Object.assign(new Error(code), { code }), phase);
    expect(error).toMatchObject({ kind, failureClass, retryable: true, status: undefined });
  });
});
