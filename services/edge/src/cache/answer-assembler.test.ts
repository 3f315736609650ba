import { describe, expect, it } from 'vitest';
import { chunkJson } from '@gateway/openai-wire';
import type { ChatChunkOutput, ChatResponseOutput } from '@gateway/proto';
import { AnswerAssembler } from './answer-assembler.js';
import { replayedChunks } from './replayed-chunks.js';

const answer: ChatResponseOutput = {
  id: 'chatcmpl-1',
  created: 1_700_000_000,
  model: 'claude-sonnet',
  choices: [
    {
      index: 0,
      finish_reason: 'FINISH_REASON_TOOL_CALLS',
      message: {
        content: 'Looking it up.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"city":"Paris"}' } },
          { id: 'call_2', type: 'function', function: { name: 'weather', arguments: '{}' } },
        ],
        thinking: { blocks: [{ thinking: { thinking: 'The user wants facts.', signature: 'sig-1' } }, { redacted_thinking: { data: 'opaque' } }] },
      },
    },
    { index: 1, finish_reason: 'FINISH_REASON_STOP', message: { content: 'Paris.', tool_calls: [] } },
  ],
  usage: { prompt_tokens: 20, completion_tokens: 9, total_tokens: 29 },
};

/** The answer's chunks as replayedChunks gives them, the finishing ones last. */
function chunksOf(response: ChatResponseOutput): ChatChunkOutput[] {
  const { chunks, finishing } = replayedChunks(response, 'chatcmpl-hit', 1_700_000_001);
  return [...chunks, ...finishing];
}

describe('a kept answer streamed and put back together', () => {
  it('is the same answer, from chunks as messages', () => {
    const assembler = new AnswerAssembler();
    for (const chunk of chunksOf(answer)) assembler.addChunk(chunk);
    const whole = assembler.finish(answer.usage);
    expect(whole?.choices).toEqual(answer.choices);
    expect(whole?.usage).toEqual(answer.usage);
    expect(whole?.id).toBe('chatcmpl-hit');
  });

  it('is the same answer, from chunks as the executor renders them (OpenAI JSON)', () => {
    const assembler = new AnswerAssembler();
    const identity = { id: 'chatcmpl-2', created: 1, model: 'claude-sonnet', includeUsage: false };
    for (const chunk of chunksOf(answer)) assembler.addRendered(JSON.stringify(chunkJson(chunk, identity)));
    expect(assembler.finish(answer.usage)?.choices).toEqual(answer.choices);
  });

  it('pieces a tool call streamed in fragments together', () => {
    const assembler = new AnswerAssembler();
    const rendered = [
      {
        choices: [
          { index: 0, delta: { role: 'assistant', tool_calls: [{ index: 0, id: 'call_9', type: 'function', function: { name: 'lookup', arguments: '' } }] } },
        ],
      },
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"q":' } }] } }] },
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '"x"}' } }] } }] },
      { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
    ];
    for (const chunk of rendered) assembler.addRendered(JSON.stringify(chunk));
    expect(assembler.finish(undefined)?.choices[0]?.message?.tool_calls).toEqual([
      { id: 'call_9', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } },
    ]);
  });

  it('is none for a stream that did not finish every choice, carried logprobs, or could not be read', () => {
    const unfinished = new AnswerAssembler();
    unfinished.addRendered(JSON.stringify({ choices: [{ index: 0, delta: { content: 'Par' } }] }));
    expect(unfinished.finish(undefined)).toBeUndefined();
    const logprobs = new AnswerAssembler();
    logprobs.addRendered(JSON.stringify({ choices: [{ index: 0, delta: { content: 'P' }, logprobs: { content: [] }, finish_reason: 'stop' }] }));
    expect(logprobs.finish(undefined)).toBeUndefined();
    const broken = new AnswerAssembler();
    broken.addRendered('{"choices":[');
    broken.addRendered(JSON.stringify({ choices: [{ index: 0, delta: { content: 'P' }, finish_reason: 'stop' }] }));
    expect(broken.finish(undefined)).toBeUndefined();
  });
});
