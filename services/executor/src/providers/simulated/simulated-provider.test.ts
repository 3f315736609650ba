import { describe, expect, it } from 'vitest';
import type { CatalogModel } from '@gateway/catalog';
import type { ChatChunk, ChatRequestOutput, ChatResponse, ToolOutput } from '@gateway/proto';
import { countPromptTokens, countTextTokens } from '@gateway/tokens';
import { simulatedModel, ECHOED_CONST, HOSTILE_REQUESTS, userRequest } from '@gateway/testing';
import { schemaValidator } from '../../testing/schema-validator.js';
import type { ProviderStreamEvent } from '../provider.js';
import { UpstreamError } from '../upstream-error.js';
import { SimulatedProvider } from './simulated-provider.js';
import schemas from './fixtures/tool-schemas.json' with { type: 'json' };

const provider = new SimulatedProvider();

function contextOf(model: CatalogModel = simulatedModel(), signal: AbortSignal = new AbortController().signal) {
  return { model, signal, requestId: 'test-request' };
}

const weatherTool: ToolOutput = {
  type: 'function',
  function: {
    name: 'get_current_weather',
    description: 'Get the current weather in a given location',
    parameters_json: JSON.stringify(schemas.get_current_weather),
  },
};
const meetingTool: ToolOutput = {
  type: 'function',
  function: { name: 'book_meeting', description: 'Book a meeting room for attendees', parameters_json: JSON.stringify(schemas.book_meeting) },
};

async function collect(iterable: AsyncIterable<ProviderStreamEvent>): Promise<ProviderStreamEvent[]> {
  const events: ProviderStreamEvent[] = [];
  for await (const event of iterable) events.push(event);
  return events;
}

function chunksOf(events: ProviderStreamEvent[]): ChatChunk[] {
  return events.flatMap((event) => (event.type === 'chunk' ? [event.chunk] : []));
}

function streamedContent(events: ProviderStreamEvent[], index = 0): string {
  return chunksOf(events)
    .flatMap((chunk) => chunk.choices ?? [])
    .filter((choice) => choice.index === index)
    .map((choice) => choice.delta?.content ?? '')
    .join('');
}

function contentOf(response: ChatResponse, index = 0): string {
  return response.choices?.[index]?.message?.content ?? '';
}

describe('SimulatedProvider: determinism', () => {
  it('gives the same text for the same seed, request and model, and different text otherwise', async () => {
    const request = userRequest('Tell me about gateways.', { seed: 42 });
    const first = contentOf(await provider.complete(request, contextOf()));
    expect(first.length).toBeGreaterThan(20);
    expect(contentOf(await provider.complete(request, contextOf()))).toBe(first);
    expect(contentOf(await provider.complete({ ...request, seed: 43 }, contextOf()))).not.toBe(first);
    expect(contentOf(await provider.complete(request, contextOf(simulatedModel({ id: 'sim-other' }))))).not.toBe(first);
    expect(contentOf(await provider.complete(userRequest('Tell me about routers.', { seed: 42 }), contextOf()))).not.toBe(first);
  });

  it('derives a seed from the request when none is given, so it is still deterministic', async () => {
    const request = userRequest('No seed here.');
    const first = contentOf(await provider.complete(request, contextOf()));
    expect(contentOf(await provider.complete(request, contextOf()))).toBe(first);
  });
});

describe('SimulatedProvider: text', () => {
  it('streams exactly the whole response content, role first and finish reason last, then the usage', async () => {
    const request = userRequest('Stream me something.', { seed: 7 });
    const whole = await provider.complete(request, contextOf());
    const events = await collect(provider.stream(request, contextOf()));
    expect(streamedContent(events)).toBe(contentOf(whole));
    const chunks = chunksOf(events);
    expect(chunks[0]?.choices?.[0]?.delta?.role).toBe('ROLE_ASSISTANT');
    expect(chunks.slice(1).every((chunk) => chunk.choices?.[0]?.delta?.role === undefined)).toBe(true);
    expect(chunks.at(-1)?.choices?.[0]?.finish_reason).toBe('FINISH_REASON_STOP');
    expect(chunks.slice(0, -1).every((chunk) => chunk.choices?.[0]?.finish_reason === undefined)).toBe(true);
    expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);
    // One chunk per token between the role chunk and the finish chunk.
    expect(chunks.length).toBe(countTextTokens(contentOf(whole)) + 2);
    const last = events.at(-1);
    expect(last).toEqual({ type: 'usage', usage: whole.usage });
    expect(events.filter((event) => event.type === 'usage')).toHaveLength(1);
  });

  it('reports exact usage: prompt tokens of the request and completion tokens of the content', async () => {
    const request = userRequest('Count my tokens, please.', { seed: 1 });
    const response = await provider.complete(request, contextOf());
    expect(response.choices?.[0]?.finish_reason).toBe('FINISH_REASON_STOP');
    expect(response.usage?.prompt_tokens).toBe(countPromptTokens(request));
    expect(response.usage?.completion_tokens).toBe(countTextTokens(contentOf(response)));
    expect(response.usage?.total_tokens).toBe(countPromptTokens(request) + countTextTokens(contentOf(response)));
  });

  it('cuts the text at max_tokens with finish reason length and completion_tokens == max_tokens', async () => {
    for (const maxTokens of [1, 5, 17]) {
      const request = userRequest('Say a lot.', { seed: 3, max_tokens: maxTokens });
      const response = await provider.complete(request, contextOf());
      expect(response.choices?.[0]?.finish_reason).toBe('FINISH_REASON_LENGTH');
      expect(response.usage?.completion_tokens).toBe(maxTokens);
      expect(countTextTokens(contentOf(response))).toBe(maxTokens);
      const events = await collect(provider.stream(request, contextOf()));
      expect(streamedContent(events)).toBe(contentOf(response));
      expect(chunksOf(events).at(-1)?.choices?.[0]?.finish_reason).toBe('FINISH_REASON_LENGTH');
    }
  });

  it("uses the model's max_output_tokens when the request sets no budget", async () => {
    const response = await provider.complete(userRequest('Say a lot.'), contextOf(simulatedModel({ max_output_tokens: 4 })));
    expect(response.choices?.[0]?.finish_reason).toBe('FINISH_REASON_LENGTH');
    expect(response.usage?.completion_tokens).toBe(4);
  });

  it('stops before the first stop sequence, whole and streamed', async () => {
    const base = userRequest('Where do I stop?', { seed: 11 });
    const full = contentOf(await provider.complete(base, contextOf()));
    const words = full.split(' ');
    const stop = ` ${words[3]}`;
    const expected = full.slice(0, full.indexOf(stop));
    const request = { ...base, stop: ['NEVER-PRESENT', stop] };
    const response = await provider.complete(request, contextOf());
    expect(contentOf(response)).toBe(expected);
    expect(contentOf(response)).not.toContain(stop);
    expect(response.choices?.[0]?.finish_reason).toBe('FINISH_REASON_STOP');
    expect(response.usage?.completion_tokens).toBe(countTextTokens(expected));
    expect(streamedContent(await collect(provider.stream(request, contextOf())))).toBe(expected);
  });

  it('answers n choices with different texts, streamed as interleaved chunks of each index', async () => {
    const request = userRequest('Three answers.', { seed: 5, n: 3 });
    const response = await provider.complete(request, contextOf());
    expect(response.choices?.map((choice) => choice.index)).toEqual([0, 1, 2]);
    expect(new Set(response.choices?.map((choice) => choice.message?.content)).size).toBe(3);
    expect(response.usage?.completion_tokens).toBe([0, 1, 2].reduce((sum, index) => sum + countTextTokens(contentOf(response, index)), 0));
    const events = await collect(provider.stream(request, contextOf()));
    for (const index of [0, 1, 2]) expect(streamedContent(events, index)).toBe(contentOf(response, index));
  });

  it('answers valid JSON for response_format json_object and json_schema', async () => {
    const objectAnswer = contentOf(await provider.complete(userRequest('JSON please.', { response_format: { type: 'json_object' } }), contextOf()));
    expect(JSON.parse(objectAnswer)).toEqual({ answer: expect.any(String) });
    const schema = schemas.book_meeting;
    const request = userRequest('Structured please.', {
      response_format: { type: 'json_schema', json_schema: { name: 'meeting', schema_json: JSON.stringify(schema), strict: true } },
    });
    const answer = contentOf(await provider.complete(request, contextOf()));
    const validate = schemaValidator().compile(schema);
    expect(validate(JSON.parse(answer))).toBe(true);
    expect(streamedContent(await collect(provider.stream(request, contextOf())))).toBe(answer);
  });
});

describe('SimulatedProvider: log probabilities', () => {
  const logprobsOf = (response: ChatResponse, index = 0) => response.choices?.[index]?.logprobs?.content?.tokens ?? [];

  it('gives every content token with a logprob <= 0, its UTF-8 bytes and top_logprobs alternatives', async () => {
    const request = userRequest('Tell me how sure you are.', { seed: 21, logprobs: true, top_logprobs: 3 });
    const response = await provider.complete(request, contextOf());
    const tokens = logprobsOf(response);
    expect(tokens.length).toBe(countTextTokens(contentOf(response)));
    expect(tokens.map((token) => token.token).join('')).toBe(contentOf(response));
    expect(response.choices?.[0]?.logprobs?.refusal).toBeUndefined();
    for (const token of tokens) {
      expect(token.logprob).toBeLessThanOrEqual(0);
      expect(token.bytes).toEqual([...Buffer.from(token.token ?? '', 'utf8')]);
      const top = token.top_logprobs ?? [];
      expect(top).toHaveLength(3);
      expect(top.map((entry) => entry.token)).toContain(token.token);
      expect(new Set(top.map((entry) => entry.token)).size).toBe(3);
      expect(top.map((entry) => entry.logprob)).toEqual(top.map((entry) => entry.logprob).sort((left, right) => (right as number) - (left as number)));
      expect(top.reduce((sum, entry) => sum + Math.exp(entry.logprob as number), 0)).toBeLessThanOrEqual(1 + 1e-6);
      for (const entry of top) expect(entry.bytes).toEqual([...Buffer.from(entry.token ?? '', 'utf8')]);
    }
  });

  it("is deterministic for a seed, leaves the text unchanged, and keeps the chosen tokens' logprobs whatever top_logprobs is", async () => {
    const request = userRequest('Deterministic logprobs.', { seed: 8, logprobs: true, top_logprobs: 2 });
    const first = await provider.complete(request, contextOf());
    const again = await provider.complete(request, contextOf());
    expect(logprobsOf(again)).toEqual(logprobsOf(first));
    const other = await provider.complete({ ...request, seed: 9 }, contextOf());
    expect(logprobsOf(other).map((token) => token.logprob)).not.toEqual(logprobsOf(first).map((token) => token.logprob));
    expect(contentOf(await provider.complete({ ...request, logprobs: undefined, top_logprobs: undefined }, contextOf()))).toBe(contentOf(first));
    const withoutAlternatives = await provider.complete({ ...request, top_logprobs: undefined }, contextOf());
    expect(logprobsOf(withoutAlternatives).map((token) => token.logprob)).toEqual(logprobsOf(first).map((token) => token.logprob));
    expect(logprobsOf(withoutAlternatives).every((token) => token.top_logprobs?.length === 0)).toBe(true);
  });

  it("streams each token's log probabilities with its chunk, the same as the whole response, for every choice", async () => {
    const request = userRequest('Stream with logprobs.', { seed: 4, n: 2, logprobs: true, top_logprobs: 1 });
    const whole = await provider.complete(request, contextOf());
    const chunks = chunksOf(await collect(provider.stream(request, contextOf())));
    for (const index of [0, 1]) {
      const choices = chunks.flatMap((chunk) => chunk.choices ?? []).filter((choice) => choice.index === index);
      expect(choices[0]?.logprobs).toEqual({ content: { tokens: [] } });
      expect(choices.at(-1)?.finish_reason).toBe('FINISH_REASON_STOP');
      expect(choices.at(-1)?.logprobs).toBeUndefined();
      for (const choice of choices.slice(1, -1)) expect(choice.logprobs?.content?.tokens?.map((token) => token.token)).toEqual([choice.delta?.content]);
      expect(choices.flatMap((choice) => choice.logprobs?.content?.tokens ?? [])).toEqual(logprobsOf(whole, index));
    }
  });

  it('gives none without logprobs, and none for a choice that calls tools', async () => {
    const plain = await provider.complete(userRequest('No logprobs.', { seed: 2 }), contextOf());
    expect(plain.choices?.[0]).not.toHaveProperty('logprobs');
    const chunks = chunksOf(await collect(provider.stream(userRequest('No logprobs.', { seed: 2 }), contextOf())));
    expect(chunks.every((chunk) => chunk.choices?.every((choice) => choice.logprobs === undefined))).toBe(true);
    const calling = await provider.complete(
      userRequest('Weather in Paris?', { logprobs: true, tools: [weatherTool], tool_choice: { choice: 'mode', mode: 'required' } }),
      contextOf(),
    );
    expect(calling.choices?.[0]?.finish_reason).toBe('FINISH_REASON_TOOL_CALLS');
    expect(calling.choices?.[0]).not.toHaveProperty('logprobs');
  });
});

describe('SimulatedProvider: tool calls', () => {
  const validator = schemaValidator();

  function expectValidCalls(response: ChatResponse, expectedNames: string[]) {
    const choice = response.choices?.[0];
    expect(choice?.finish_reason).toBe('FINISH_REASON_TOOL_CALLS');
    expect(choice?.message?.content).toBeUndefined();
    const calls = choice?.message?.tool_calls ?? [];
    expect(calls.map((call) => call.function?.name)).toEqual(expectedNames);
    for (const call of calls) {
      expect(call.id).toMatch(/^call_[A-Za-z0-9]{24}$/);
      expect(call.type).toBe('function');
      const schema = schemas[call.function?.name as keyof typeof schemas];
      const validate = validator.compile(schema);
      const args: unknown = JSON.parse(call.function?.arguments ?? '');
      expect(validate(args), validator.errorsText(validate.errors)).toBe(true);
    }
    expect(response.usage?.completion_tokens).toBe(
      calls.reduce((sum, call) => sum + countTextTokens(call.function?.name ?? '') + countTextTokens(call.function?.arguments ?? ''), 0),
    );
  }

  it('always calls with tool_choice required, with arguments valid against the schema', async () => {
    for (let seed = 0; seed < 20; seed += 1) {
      expectValidCalls(
        await provider.complete(
          userRequest('Hello there.', { seed, tools: [meetingTool, weatherTool], tool_choice: { choice: 'mode', mode: 'required' } }),
          contextOf(),
        ),
        ['book_meeting'],
      );
    }
  });

  it('calls the named function when tool_choice names one', async () => {
    expectValidCalls(
      await provider.complete(
        userRequest('Hello there.', { tools: [meetingTool, weatherTool], tool_choice: { choice: 'function_name', function_name: 'get_current_weather' } }),
        contextOf(),
      ),
      ['get_current_weather'],
    );
  });

  it('with auto, calls a tool the last user message mentions by name or by a description word, and answers text otherwise', async () => {
    const tools = [meetingTool, weatherTool];
    expectValidCalls(await provider.complete(userRequest('Please get current weather for Paris.', { tools }), contextOf()), ['get_current_weather']);
    expectValidCalls(await provider.complete(userRequest('What is the weather like?', { tools, tool_choice: { choice: 'mode', mode: 'auto' } }), contextOf()), [
      'get_current_weather',
    ]);
    const plain = await provider.complete(userRequest('Just chat with me.', { tools }), contextOf());
    expect(plain.choices?.[0]?.finish_reason).toBe('FINISH_REASON_STOP');
    expect(plain.choices?.[0]?.message?.tool_calls ?? []).toEqual([]);
  });

  it('never calls with tool_choice none', async () => {
    const response = await provider.complete(
      userRequest('Please get_current_weather now.', { tools: [weatherTool], tool_choice: { choice: 'mode', mode: 'none' } }),
      contextOf(),
    );
    expect(response.choices?.[0]?.finish_reason).toBe('FINISH_REASON_STOP');
    expect(contentOf(response).length).toBeGreaterThan(0);
  });

  it('makes parallel calls unless parallel_tool_calls is false', async () => {
    const text = 'Check the weather and book_meeting for us.';
    expectValidCalls(await provider.complete(userRequest(text, { tools: [meetingTool, weatherTool] }), contextOf()), ['book_meeting', 'get_current_weather']);
    expectValidCalls(await provider.complete(userRequest(text, { tools: [meetingTool, weatherTool], parallel_tool_calls: false }), contextOf()), [
      'book_meeting',
    ]);
  });

  it("streams tool calls the way OpenAI does: id, type and name only on each call's first delta, arguments in fragments", async () => {
    const request = userRequest('Check the weather and book_meeting for us.', { seed: 9, tools: [meetingTool, weatherTool] });
    const whole = await provider.complete(request, contextOf());
    const events = await collect(provider.stream(request, contextOf()));
    const chunks = chunksOf(events);
    expect(chunks[0]?.choices?.[0]?.delta?.role).toBe('ROLE_ASSISTANT');
    const deltas = chunks.flatMap((chunk) => chunk.choices?.[0]?.delta?.tool_calls ?? []);
    const rebuilt = new Map<number, { id?: string | null; name?: string | null; arguments: string; openings: number }>();
    for (const delta of deltas) {
      const index = delta.index as number;
      const entry = rebuilt.get(index) ?? { arguments: '', openings: 0 };
      if (delta.id !== undefined) {
        entry.openings += 1;
        entry.id = delta.id;
        entry.name = delta.function?.name;
        expect(delta.type).toBe('function');
        expect(delta.function?.arguments).toBe('');
      } else {
        expect(delta.type).toBeUndefined();
        expect(delta.function?.name).toBeUndefined();
      }
      entry.arguments += delta.function?.arguments ?? '';
      rebuilt.set(index, entry);
    }
    const calls = whole.choices?.[0]?.message?.tool_calls ?? [];
    expect(calls).toHaveLength(2);
    calls.forEach((call, index) => {
      expect(rebuilt.get(index)).toEqual({ id: call.id, name: call.function?.name, arguments: call.function?.arguments, openings: 1 });
    });
    expect(deltas.filter((delta) => delta.id === undefined).length).toBeGreaterThan(2);
    expect(chunks.at(-1)?.choices?.[0]?.finish_reason).toBe('FINISH_REASON_TOOL_CALLS');
    expect(events.at(-1)).toEqual({ type: 'usage', usage: whole.usage });
  });
});

describe('SimulatedProvider: timing and cancellation', () => {
  it('waits the time to first token before answering and before the first chunk', async () => {
    const model = simulatedModel({ simulation: { time_to_first_token_ms: 150, tokens_per_second: 0 } });
    let started = performance.now();
    await provider.complete(userRequest('Hi.'), contextOf(model));
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
    started = performance.now();
    const iterator = provider.stream(userRequest('Hi.'), contextOf(model))[Symbol.asyncIterator]();
    await iterator.next();
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
    await iterator.return?.(undefined);
  });

  it('paces tokens at tokens_per_second', async () => {
    const model = simulatedModel({ simulation: { time_to_first_token_ms: 0, tokens_per_second: 100 } });
    const started = performance.now();
    const events = await collect(provider.stream(userRequest('Pace me.', { max_tokens: 10 }), contextOf(model)));
    // 10 tokens and the finish chunk after the first chunk, 10 ms apart.
    expect(chunksOf(events)).toHaveLength(12);
    expect(performance.now() - started).toBeGreaterThanOrEqual(100);
  });

  it('stops at once when aborted, whole or streamed', async () => {
    const model = simulatedModel({ simulation: { time_to_first_token_ms: 10_000, tokens_per_second: 0 } });
    const controller = new AbortController();
    const started = performance.now();
    setTimeout(() => controller.abort(), 30);
    await expect(provider.complete(userRequest('Hi.'), contextOf(model, controller.signal))).rejects.toMatchObject({ name: 'AbortError' });
    // Well before the 10 s first token: one that ignored the abort would only end then.
    expect(performance.now() - started).toBeLessThan(5_000);

    const slow = simulatedModel({ simulation: { time_to_first_token_ms: 0, tokens_per_second: 20 } });
    const streamController = new AbortController();
    const received: ProviderStreamEvent[] = [];
    const run = (async () => {
      for await (const event of provider.stream(userRequest('Hi.'), contextOf(slow, streamController.signal))) {
        received.push(event);
        if (received.length === 2) streamController.abort();
      }
    })();
    await expect(run).rejects.toMatchObject({ name: 'AbortError' });
    expect(received).toHaveLength(2);
  });
});

describe('SimulatedProvider: test hooks', () => {
  it('fails before the first byte with [[simulate:error=503]]', async () => {
    const request = userRequest('Break please [[simulate:error=503]]');
    await expect(provider.complete(request, contextOf())).rejects.toMatchObject({ name: 'UpstreamError', status: 503, retryable: true });
    const received: ProviderStreamEvent[] = [];
    await expect(
      (async () => {
        for await (const event of provider.stream(request, contextOf())) received.push(event);
      })(),
    ).rejects.toBeInstanceOf(UpstreamError);
    expect(received).toEqual([]);
  });

  it('sends a retry-after with a simulated 429 and fails timeouts and connections without a status', async () => {
    await expect(provider.complete(userRequest('[[simulate:error=429]] [[simulate:retry_after_ms=2500]]'), contextOf())).rejects.toMatchObject({
      status: 429,
      retryAfterMs: 2500,
      retryable: true,
    });
    await expect(provider.complete(userRequest('[[simulate:error=400]]'), contextOf())).rejects.toMatchObject({ status: 400, retryable: false });
    await expect(provider.complete(userRequest('[[simulate:error=timeout]]'), contextOf())).rejects.toMatchObject({ kind: 'timeout', status: undefined });
    await expect(provider.complete(userRequest('[[simulate:error=connection]]'), contextOf())).rejects.toMatchObject({ kind: 'connection' });
  });

  it('fails the stream after the given number of chunks with [[simulate:fail_after=5]], and the whole response too', async () => {
    const request = userRequest('Then fail [[simulate:fail_after=5]]', { seed: 2 });
    const received: ProviderStreamEvent[] = [];
    await expect(
      (async () => {
        for await (const event of provider.stream(request, contextOf())) received.push(event);
      })(),
    ).rejects.toMatchObject({ name: 'UpstreamError', kind: 'truncated', retryable: true });
    expect(received).toHaveLength(5);
    expect(received.every((event) => event.type === 'chunk')).toBe(true);
    await expect(provider.complete(request, contextOf())).rejects.toBeInstanceOf(UpstreamError);
  });

  it('reads hooks from the last user message only', async () => {
    const request: ChatRequestOutput = {
      messages: [
        { role: 'ROLE_USER', content: 'text', text: '[[simulate:error=500]]', tool_calls: [] },
        { role: 'ROLE_ASSISTANT', content: 'text', text: 'It failed.', tool_calls: [] },
        { role: 'ROLE_USER', content: 'text', text: 'Try again.', tool_calls: [] },
      ],
      stop: [],
      tools: [],
    };
    await expect(provider.complete(request, contextOf())).resolves.toMatchObject({ choices: [expect.anything()] });
  });
});

describe('SimulatedProvider: hostile requests', () => {
  // What each answers; how long each takes is `pnpm bench simulated`'s (bench/simulated.bench.ts).
  // The timeout is a hang guard: each once took from seconds to hours, and takes well under one.
  const HANG_GUARD_MS = 30_000;

  it(
    'answers a request whose user message is one 1 MB word, whole and streamed',
    async () => {
      const request = HOSTILE_REQUESTS.oneMegabyteWord();
      const whole = await provider.complete(request, contextOf());
      expect(whole.usage?.prompt_tokens).toBe(countPromptTokens(request));
      expect(contentOf(whole).length).toBeGreaterThan(20);
      const streamed = await collect(provider.stream(request, contextOf()));
      expect(streamedContent(streamed)).toBe(contentOf(whole));
    },
    HANG_GUARD_MS,
  );

  /** A hostile request's test under the hang guard: `check` reads its whole answer. */
  const itAnswersWhole = (name: string, request: () => ChatRequestOutput, check: (result: ChatResponse) => void) =>
    it(name, async () => check(await provider.complete(request(), contextOf())), HANG_GUARD_MS);

  itAnswersWhole('echoes a 1 MB json_schema const cut at max_tokens, tokenizing no more than the budget', HOSTILE_REQUESTS.echoedConst, (result) => {
    expect(result.choices?.[0]?.finish_reason).toBe('FINISH_REASON_LENGTH');
    expect(result.usage?.completion_tokens).toBe(40);
    expect(JSON.stringify(ECHOED_CONST).startsWith(contentOf(result))).toBe(true);
  });

  itAnswersWhole('matches tools against a 1 MB message and a 1 MB description', HOSTILE_REQUESTS.toolsAgainstMegabytes, (result) => {
    expect(result.choices?.[0]?.finish_reason).toBe('FINISH_REASON_STOP');
  });

  itAnswersWhole('answers 128 choices with log probabilities of a 4 MB prompt', HOSTILE_REQUESTS.manyChoicesOfFourMegabytes, (result) => {
    expect(result.choices).toHaveLength(128);
    expect(result.choices?.every((choice) => (choice.logprobs?.content?.tokens?.length ?? 0) > 0)).toBe(true);
  });
});
