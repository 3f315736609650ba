import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { Dispatcher } from 'undici';
import { encodeStreamMessage, type BedrockStreamMessage } from '@gateway/testing';
import { readEventStream } from './event-stream.js';

const MESSAGES: BedrockStreamMessage[] = [
  { event: 'messageStart', payload: { role: 'assistant' } },
  { event: 'contentBlockDelta', payload: { contentBlockIndex: 0, delta: { text: 'Hé, ünïcödé ✓' } } },
  { exception: 'throttlingException', payload: { message: 'Too many requests' } },
];

/** A response body made of `bytes` cut into pieces of `size` bytes. */
function bodyOf(bytes: Uint8Array, size: number): Dispatcher.ResponseData['body'] {
  const pieces: Buffer[] = [];
  for (let offset = 0; offset < bytes.length; offset += size) pieces.push(Buffer.from(bytes.subarray(offset, offset + size)));
  return Readable.from(pieces) as unknown as Dispatcher.ResponseData['body'];
}

async function read(body: Dispatcher.ResponseData['body']) {
  const messages = [];
  for await (const message of readEventStream(body, { provider: 'bedrock', signal: new AbortController().signal })) messages.push(message);
  return messages;
}

describe('readEventStream', () => {
  const bytes = Buffer.concat(MESSAGES.map((message) => Buffer.from(encodeStreamMessage(message))));

  it.each([1, 7, 4096])('decodes every message whatever the pieces the body arrives in (%i bytes)', async (size) => {
    const messages = await read(bodyOf(bytes, size));
    expect(messages.map(({ messageType, type }) => [messageType, type])).toEqual([
      ['event', 'messageStart'],
      ['event', 'contentBlockDelta'],
      ['exception', 'throttlingException'],
    ]);
    expect(messages[1]?.payload).toMatchObject({ contentBlockIndex: 0, delta: { text: 'Hé, ünïcödé ✓' } });
    expect(messages[2]?.payload).toEqual({ message: 'Too many requests' });
  });

  it('fails a message whose CRC does not match as malformed', async () => {
    const corrupted = Buffer.from(bytes);
    corrupted[20] = (corrupted[20] ?? 0) ^ 0xff;
    await expect(read(bodyOf(corrupted, 64))).rejects.toMatchObject({ name: 'UpstreamError', kind: 'malformed' });
  });

  it('fails a length prelude no message can have as malformed, without waiting for that many bytes', async () => {
    const garbage = Buffer.from('<html><body>Bad gateway</body></html>');
    await expect(read(bodyOf(garbage, 64))).rejects.toMatchObject({ name: 'UpstreamError', kind: 'malformed' });
  });

  it('yields nothing of a message cut off by the end of the body', async () => {
    const messages = await read(bodyOf(bytes.subarray(0, bytes.length - 5), 64));
    expect(messages.map((message) => message.type)).toEqual(['messageStart', 'contentBlockDelta']);
  });
});
