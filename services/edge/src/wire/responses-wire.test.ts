/**
 * The answer of a Responses request, whole and streamed: the chat answer and chunks the executor
 * gives, rendered as the Response object and the Responses event sequence OpenAI publishes.
 */
import { describe, expect, it } from 'vitest';
import type { ChatResponseOutput } from '@gateway/proto';
import { RequestError } from '../request-error.js';
import { parseResponsesRequest } from './parse-responses-request.js';
import type { ResponsesCompletion } from './responses-output.js';
import { responsesWire } from './responses-wire.js';
import { answeredCompletion, begunStream, chunk, namedEvents, streamedEvents } from '../testing/wire-streams.js';

/** A completion as the pipeline hands it to the wire once the model answered. */
function completionOf(body: Record<string, unknown>): ResponsesCompletion {
  return answeredCompletion(parseResponsesRequest({ model: 'sim-full', ...body }));
}

const tools = [{ type: 'namespace', name: 'crm', description: 'CRM', tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object' } }] }];

describe('the Responses wire', () => {
  it('renders a whole answer as a Response: message and function_call items, usage, the gateway object', () => {
    const completion = completionOf({ input: 'Look up ACME.', tools, instructions: 'Be brief.' });
    const response = {
      id: 'chatcmpl-1',
      created: 1_700_000_000,
      model: 'sim-full',
      choices: [
        {
          index: 0,
          message: {
            role: 'ROLE_ASSISTANT',
            content: 'Looking.',
            tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'crm__lookup', arguments: '{"q":"ACME"}' } }],
          },
          finish_reason: 'FINISH_REASON_TOOL_CALLS',
        },
      ],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, cached_tokens: 4, reasoning_tokens: 2 },
    } as unknown as ChatResponseOutput;
    const body = JSON.parse(responsesWire.renderWhole(completion, response));
    expect(body).toMatchObject({
      object: 'response',
      created_at: 1_700_000_000,
      status: 'completed',
      incomplete_details: null,
      error: null,
      model: 'sim-full',
      instructions: 'Be brief.',
      tools,
      output: [
        { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Looking.', annotations: [] }] },
        { type: 'function_call', status: 'completed', call_id: 'call_1', name: 'lookup', namespace: 'crm', arguments: '{"q":"ACME"}' },
      ],
      usage: {
        input_tokens: 10,
        input_tokens_details: { cached_tokens: 4 },
        output_tokens: 5,
        output_tokens_details: { reasoning_tokens: 2 },
        total_tokens: 15,
      },
      gateway: { routed_to: 'sim-full', cost_usd: 0.000003 },
    });
    expect(body.id).toMatch(/^resp_[0-9a-f]{32}$/);
    expect(body.output[0].id).toMatch(/^msg_/);
    expect(body.output[1].id).toMatch(/^fc_/);
  });

  it("says the input tokens written to the provider's cache in input_tokens_details.cache_write_tokens, only when there are some", () => {
    const answer = (usage: Record<string, number>) =>
      ({ choices: [{ index: 0, message: { content: 'Paris.' }, finish_reason: 'FINISH_REASON_STOP' }], usage }) as unknown as ChatResponseOutput;
    const written = JSON.parse(
      responsesWire.renderWhole(
        completionOf({ input: 'Capital of France?' }),
        answer({ prompt_tokens: 2160, completion_tokens: 15, total_tokens: 2175, cached_tokens: 2048, cache_write_tokens: 100 }),
      ),
    );
    expect(written.usage).toMatchObject({ input_tokens: 2160, input_tokens_details: { cached_tokens: 2048, cache_write_tokens: 100 } });
    const none = JSON.parse(
      responsesWire.renderWhole(completionOf({ input: 'Capital of France?' }), answer({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 })),
    );
    expect(none.usage.input_tokens_details).toEqual({ cached_tokens: 0 });
  });

  it('marks an answer cut at max_output_tokens incomplete', () => {
    const response = {
      choices: [{ index: 0, message: { content: 'Rivers are' }, finish_reason: 'FINISH_REASON_LENGTH' }],
      usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
    } as unknown as ChatResponseOutput;
    const body = JSON.parse(responsesWire.renderWhole(completionOf({ input: 'Rivers?', max_output_tokens: 2 }), response));
    expect(body).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, max_output_tokens: 2 });
    expect(body.output[0]).toMatchObject({ status: 'incomplete', content: [{ text: 'Rivers are' }] });
  });

  it('streams text in the published event sequence, numbered from 0, ending with response.completed and no [DONE]', () => {
    const { stream, head } = begunStream(responsesWire, completionOf({ input: 'Hi', stream: true }));
    expect(head['openai-model']).toBe('sim-full');
    const sequence = streamedEvents(stream, [{ role: 'assistant', content: '' }, { content: 'Hel' }, { content: 'lo' }], 'stop', {
      prompt_tokens: 3,
      completion_tokens: 2,
      total_tokens: 5,
    });
    expect(sequence.map((event) => event.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(sequence.map((event) => event.sequence_number)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(sequence[0]).toMatchObject({ response: { status: 'in_progress', output: [], usage: null } });
    expect(sequence[6]).toMatchObject({ text: 'Hello', output_index: 0, content_index: 0 });
    const completed = sequence.at(-1)!.response as Record<string, unknown>;
    expect(completed).toMatchObject({
      status: 'completed',
      output: [{ type: 'message', status: 'completed', content: [{ type: 'output_text', text: 'Hello' }] }],
      usage: { input_tokens: 3, output_tokens: 2, total_tokens: 5 },
      gateway: { routed_to: 'sim-full' },
    });
    expect(completed.id).toBe((sequence[0]!.response as { id: string }).id);
  });

  it("leaves an answer's thinking out of the Response, whole and streamed, and renders the rest as before", () => {
    const { stream } = begunStream(responsesWire, completionOf({ input: 'Hi', stream: true }));
    const sequence = streamedEvents(
      stream,
      [
        { role: 'assistant', content: '' },
        { reasoning_content: 'Greet.' },
        { thinking_signature: 'sig' },
        { redacted_thinking: 'opaque' },
        { content: 'Hello' },
      ],
      'stop',
    );
    expect(sequence.filter((event) => event.type.startsWith('response.output_item.added')).map((event) => (event.item as { type: string }).type)).toEqual([
      'message',
    ]);
    expect(JSON.stringify(sequence)).not.toMatch(/Greet|sig|opaque/);
    const whole = JSON.parse(
      responsesWire.renderWhole(completionOf({ input: 'Hi' }), {
        choices: [
          {
            index: 0,
            message: { content: 'Hello', tool_calls: [], thinking: { blocks: [{ thinking: { thinking: 'Greet.', signature: 'sig' } }] } },
            finish_reason: 'FINISH_REASON_STOP',
          },
        ],
      } as never),
    );
    expect(whole.output).toMatchObject([{ type: 'message', content: [{ type: 'output_text', text: 'Hello' }] }]);
    expect(JSON.stringify(whole)).not.toContain('Greet');
  });

  it('streams a tool call as a function_call item with argument deltas, named back by its namespace', () => {
    const { stream } = begunStream(responsesWire, completionOf({ input: 'Look up ACME.', tools, stream: true }));
    const sequence = streamedEvents(
      stream,
      [
        { tool_calls: [{ index: 0, id: 'call_9', type: 'function', function: { name: 'crm__lookup', arguments: '' } }] },
        { tool_calls: [{ index: 0, function: { arguments: '{"q":' } }] },
        { tool_calls: [{ index: 0, function: { arguments: '"ACME"}' } }] },
      ],
      'tool_calls',
      { prompt_tokens: 8, completion_tokens: 6, total_tokens: 14 },
    );
    expect(sequence.map((event) => event.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(sequence[2]).toMatchObject({
      output_index: 0,
      item: { type: 'function_call', call_id: 'call_9', name: 'lookup', namespace: 'crm', arguments: '', status: 'in_progress' },
    });
    expect(sequence[5]).toMatchObject({ name: 'lookup', arguments: '{"q":"ACME"}' });
    expect(sequence.at(-1)).toMatchObject({ response: { output: [{ type: 'function_call', arguments: '{"q":"ACME"}', status: 'completed' }] } });
  });

  it('finishes each output item before the next begins: the message, then its function calls', () => {
    const stream = responsesWire.openStream(completionOf({ input: 'Look up ACME.', tools, stream: true }));
    const sequence = streamedEvents(
      stream,
      [{ content: 'Looking.' }, { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'crm__lookup', arguments: '{}' } }] }],
      'tool_calls',
    );
    const placed = sequence.filter((event) => 'output_index' in event).map((event) => [event.type, event.output_index]);
    expect(placed).toEqual([
      ['response.output_item.added', 0],
      ['response.content_part.added', 0],
      ['response.output_text.delta', 0],
      ['response.output_text.done', 0],
      ['response.content_part.done', 0],
      ['response.output_item.done', 0],
      ['response.output_item.added', 1],
      ['response.function_call_arguments.delta', 1],
      ['response.function_call_arguments.done', 1],
      ['response.output_item.done', 1],
    ]);
    expect(sequence.at(-1)).toMatchObject({ response: { output: [{ type: 'message' }, { type: 'function_call', name: 'lookup' }] } });

    const parallel = streamedEvents(
      responsesWire.openStream(completionOf({ input: 'Look up ACME and Initech.', tools, stream: true })),
      [
        {
          tool_calls: [
            { index: 0, id: 'call_1', type: 'function', function: { name: 'crm__lookup', arguments: '{"q":"ACME"}' } },
            { index: 1, id: 'call_2', type: 'function', function: { name: 'crm__lookup', arguments: '{"q":"Initech"}' } },
          ],
        },
      ],
      'tool_calls',
    );
    const items = parallel.filter((event) => event.type.startsWith('response.output_item.')).map((event) => `${event.type} ${event.output_index}`);
    expect(items).toEqual(['response.output_item.added 0', 'response.output_item.done 0', 'response.output_item.added 1', 'response.output_item.done 1']);
    expect(parallel.at(-1)).toMatchObject({
      response: {
        output: [
          { call_id: 'call_1', arguments: '{"q":"ACME"}' },
          { call_id: 'call_2', arguments: '{"q":"Initech"}' },
        ],
      },
    });
  });

  it("answers a custom tool's call as a custom_tool_call item with its raw input, whole and streamed", () => {
    const custom = [{ type: 'custom', name: 'apply_patch', description: 'Applies a patch.' }];
    const patchArguments = JSON.stringify({ input: '*** Begin Patch\n*** End Patch' });
    const response = {
      choices: [
        {
          index: 0,
          message: { tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'apply_patch', arguments: patchArguments } }] },
          finish_reason: 'FINISH_REASON_TOOL_CALLS',
        },
      ],
    } as unknown as ChatResponseOutput;
    const body = JSON.parse(responsesWire.renderWhole(completionOf({ input: 'Patch it.', tools: custom }), response));
    expect(body.output).toEqual([
      {
        id: expect.stringMatching(/^ctc_/),
        type: 'custom_tool_call',
        status: 'completed',
        call_id: 'call_1',
        name: 'apply_patch',
        input: '*** Begin Patch\n*** End Patch',
      },
    ]);

    const sequence = streamedEvents(
      responsesWire.openStream(completionOf({ input: 'Patch it.', tools: custom, stream: true })),
      [
        { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'apply_patch', arguments: patchArguments.slice(0, 10) } }] },
        { tool_calls: [{ index: 0, function: { arguments: patchArguments.slice(10) } }] },
      ],
      'tool_calls',
    );
    expect(sequence.map((event) => event.type).slice(2)).toEqual([
      'response.output_item.added',
      'response.custom_tool_call_input.delta',
      'response.custom_tool_call_input.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(sequence[2]).toMatchObject({ item: { type: 'custom_tool_call', input: '' } });
    expect(sequence[4]).toMatchObject({ input: '*** Begin Patch\n*** End Patch' });
  });

  it('ends a stream cut at max_output_tokens with response.incomplete, and a failed one with response.failed', () => {
    const cut = responsesWire.openStream(completionOf({ input: 'Hi', stream: true, max_output_tokens: 1 }));
    const cutEvents = streamedEvents(cut, [{ content: 'Hi' }], 'length');
    expect(cutEvents.at(-1)).toMatchObject({
      type: 'response.incomplete',
      response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } },
    });

    const failed = responsesWire.openStream(completionOf({ input: 'Hi', stream: true }));
    const failedEvents = namedEvents(
      failed.event(chunk({ content: 'Hi' })) + failed.failure(new RequestError(502, 'The upstream failed.', { code: 'upstream_error' })),
    );
    expect(failedEvents.map((event) => event.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.failed',
    ]);
    expect(failedEvents.at(-1)).toMatchObject({
      response: { status: 'failed', error: { code: 'upstream_error', message: 'The upstream failed.' }, usage: null },
    });
  });
});
