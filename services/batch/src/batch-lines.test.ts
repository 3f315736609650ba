/** The pure parts of a batch: the check of a batch file, the body sent, the output and error lines, the retry delays. */
import { describe, expect, it } from 'vitest';
import { GatewayError } from '@gateway/grpc';
import { errorLine, outputLine, parseBatchFile, randomId, retryableStatus, retryDelayMs, sentBody } from './batch-lines.js';

const line = (fields: Record<string, unknown>) =>
  JSON.stringify({ custom_id: 'a', method: 'POST', url: '/v1/chat/completions', body: { model: 'm' }, ...fields });

describe('parseBatchFile', () => {
  it('reads each non-empty line, with its place and its line number', () => {
    const lines = parseBatchFile(`${line({ custom_id: 'a' })}\r\n\n${line({ custom_id: 'b', url: '/v1/embeddings' })}\n`, 10);
    expect(lines).toEqual([
      { index: 0, line: 1, customId: 'a', method: 'POST', url: '/v1/chat/completions', body: { model: 'm' } },
      { index: 1, line: 3, customId: 'b', method: 'POST', url: '/v1/embeddings', body: { model: 'm' } },
    ]);
  });

  const refused: Array<[string, string, string]> = [
    ['not JSON', 'nope', 'Line 1 of the file: not valid JSON.'],
    ['an array', '[1]', 'Line 1 of the file: not a JSON object.'],
    ['no custom_id', line({ custom_id: undefined }), 'Line 1 of the file: `custom_id` is missing or not a string.'],
    ['a numeric custom_id', line({ custom_id: 7 }), 'Line 1 of the file: `custom_id` is missing or not a string.'],
    ['a repeated custom_id', `${line({})}\n${line({})}`, 'Line 2 of the file: `custom_id` "a" is used by an earlier line; each must be unique.'],
    ['GET', line({ method: 'GET' }), 'Line 1 of the file: `method` must be "POST".'],
    ['another url', line({ url: '/v1/completions' }), 'Line 1 of the file: `url` must be one of /v1/chat/completions, /v1/responses, /v1/embeddings.'],
    ['no body', line({ body: 'text' }), 'Line 1 of the file: `body` is missing or not a JSON object.'],
    [
      'too many',
      `${line({ custom_id: 'a' })}\n${line({ custom_id: 'b' })}\n${line({ custom_id: 'c' })}`,
      'Line 3 of the file: the file has more than 2 requests, the most a batch takes.',
    ],
    ['nothing', '\n\n', 'The file holds no requests: a batch file has one JSON request a line.'],
  ];

  it.each(refused)('refuses %s', (_what, text, message) => {
    let thrown: unknown;
    try {
      parseBatchFile(text, 2);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(GatewayError);
    expect((thrown as GatewayError).message).toBe(message);
    expect((thrown as GatewayError).param).toBe('file');
  });
});

describe('the lines of the output and error files', () => {
  it('are as OpenAI writes them', () => {
    expect(JSON.parse(outputLine('x', { statusCode: 429, requestId: 'req_1', body: { error: {} } }, 'batch_req_1'))).toEqual({
      id: 'batch_req_1',
      custom_id: 'x',
      response: { status_code: 429, request_id: 'req_1', body: { error: {} } },
      error: null,
    });
    expect(JSON.parse(errorLine('y', { code: 'connection_failed', message: 'gone' }, 'batch_req_2'))).toEqual({
      id: 'batch_req_2',
      custom_id: 'y',
      response: null,
      error: { code: 'connection_failed', message: 'gone' },
    });
    expect(randomId('batch_req_')).toMatch(/^batch_req_[A-Za-z0-9]{24}$/);
  });
});

describe('sending', () => {
  it('never streams', () => {
    expect(sentBody({ model: 'm', stream: true, stream_options: { include_usage: true } })).toEqual({ model: 'm' });
  });

  it('waits as Retry-After says, else doubles from the base', () => {
    expect(retryDelayMs(1, '3', 1_000)).toBe(3_000);
    expect(retryDelayMs(1, null, 1_000)).toBe(1_000);
    expect(retryDelayMs(3, 'soon', 1_000)).toBe(4_000);
    expect(retryDelayMs(20, null, 1_000)).toBe(60_000);
    expect([429, 500, 502, 503, 504, 400].map(retryableStatus)).toEqual([true, false, true, true, true, false]);
  });
});
