/**
 * A fake OpenAI-compatible chat model for the response cache's end-to-end tests: every answer is
 * new and names its number and the question (`Answer 7 to: "..."`), whole or streamed as asked,
 * with usage, so that a test tells a cached answer from a model's and counts the model's calls.
 */
import type { ServerResponse } from 'node:http';
import type { ReceivedRequest } from '@gateway/testing';

/** The fake model: `handle` answers a request (a FakeUpstream's handler); `answered` counts its answers so far. */
export class NumberedAnswers {
  answered = 0;

  readonly handle = (request: ReceivedRequest, response: ServerResponse): void => {
    this.answered += 1;
    const messages = (request.body.messages as Array<{ content?: unknown }>) ?? [];
    const question = JSON.stringify(messages.at(-1)?.content ?? '').slice(0, 80);
    const text = `Answer ${this.answered} to: ${question}`;
    const usage = { prompt_tokens: 20, completion_tokens: 10, total_tokens: 30 };
    const base = { id: `chatcmpl-up-${this.answered}`, created: 1_735_689_600, model: 'gpt-4o-mini' };
    if (request.body.stream !== true) {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          ...base,
          object: 'chat.completion',
          choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
          usage,
        }),
      );
      return;
    }
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const words = text.split(/(?<= )/);
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    response.end(
      `${words.map((word, index) => chunk(index === 0 ? { role: 'assistant', content: word } : { content: word })).join('')}${chunk({}, 'stop')}` +
        `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [], usage })}\n\ndata: [DONE]\n\n`,
    );
  };
}
