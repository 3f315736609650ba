/**
 * The upstream of `pnpm bench proxy`: an OpenAI-compatible chat-completions server on node:http
 * that answers at once with a 20-token answer, whole or as 20 SSE chunks followed by a usage chunk
 * (stream_options.include_usage) and [DONE]. With MOCK_HOLD_STREAMS=1 a stream sends its first
 * chunk and then holds the connection open until the client leaves (the slow-upstream memory run).
 * Prints its port on stdout once listening.
 */
import { createServer } from 'node:http';

const HOLD = process.env.MOCK_HOLD_STREAMS === '1';
const WORDS = [
  'The',
  ' quick',
  ' brown',
  ' fox',
  ' jumps',
  ' over',
  ' the',
  ' lazy',
  ' dog',
  ' while',
  ' the',
  ' cat',
  ' sleeps',
  ' in',
  ' the',
  ' warm',
  ' afternoon',
  ' sun',
  ' today',
  '.',
];
const CREATED = 1735689600;
const USAGE = { prompt_tokens: 250, completion_tokens: WORDS.length, total_tokens: 250 + WORDS.length };

const whole = (model) =>
  JSON.stringify({
    id: 'chatcmpl-mock',
    object: 'chat.completion',
    created: CREATED,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: WORDS.join('') }, finish_reason: 'stop', logprobs: null }],
    usage: USAGE,
  });
const chunk = (model, delta, finish, usage) =>
  `data: ${JSON.stringify({
    id: 'chatcmpl-mock',
    object: 'chat.completion.chunk',
    created: CREATED,
    model,
    choices: finish === undefined ? [] : [{ index: 0, delta, finish_reason: finish, logprobs: null }],
    ...(usage ? { usage } : {}),
  })}\n\n`;

const server = createServer((request, response) => {
  const parts = [];
  request.on('data', (part) => parts.push(part));
  request.on('end', () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(parts).toString('utf8'));
    } catch {
      body = undefined;
    }
    if (!body || !Array.isArray(body.messages)) {
      response.writeHead(400, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: 'invalid body', type: 'invalid_request_error', param: null, code: null } }));
      return;
    }
    const model = String(body.model ?? 'mock');
    if (!body.stream) {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(whole(model));
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    if (HOLD) {
      response.write(chunk(model, { role: 'assistant', content: WORDS[0] }, null));
      return; // held until the client goes away
    }
    let text = '';
    WORDS.forEach((word, index) => {
      text += chunk(model, index === 0 ? { role: 'assistant', content: word } : { content: word }, null);
    });
    text += chunk(model, {}, 'stop');
    if (body.stream_options?.include_usage) text += chunk(model, undefined, undefined, USAGE);
    response.end(`${text}data: [DONE]\n\n`);
  });
});
server.keepAliveTimeout = 60_000;
server.maxConnections = 100_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => console.log(String(server.address().port)));
