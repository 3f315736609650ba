/**
 * The running cluster driven by two widely used AI toolkits, written the way their users write them:
 * the Vercel AI SDK (`ai` with `@ai-sdk/openai`'s chat-completions model) and LangChain
 * (`@langchain/openai`'s ChatOpenAI). What each toolkit reports is compared with what the gateway
 * itself answers to the same request through the official `openai` client: the simulated model is
 * deterministic for the same messages and seed, so text and usage must match exactly.
 * The simulated model calls a tool when the last user message names it (see completion-plan.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { createOpenAI } from '@ai-sdk/openai';
import { APICallError, generateText, Output, stepCountIs, streamText, tool as aiTool, type LanguageModel } from 'ai';
import { ChatOpenAI } from '@langchain/openai';
import { type AIMessageChunk, HumanMessage, SystemMessage } from '@langchain/core/messages';
import { tool as langchainTool } from '@langchain/core/tools';
import { z } from 'zod';
import { startCluster, type Cluster } from './cluster.js';

const CATALOG = new URL('./fixtures/conformance-catalog.yaml', import.meta.url).pathname;
const MODEL = 'sim-full';
const SYSTEM = 'You are a concise assistant.';
const QUESTION = 'Tell me about rivers.';
const WEATHER_QUESTION = 'What is the weather in Oslo? Use get_weather.';

const cityFacts = z.object({ city: z.string(), population: z.number().int(), rivers: z.array(z.string()) });
const weatherInput = z.object({ city: z.string().describe('The city'), unit: z.enum(['c', 'f']).describe('Celsius or Fahrenheit') });

let cluster: Cluster;
let official: OpenAI;

beforeAll(async () => {
  cluster = await startCluster({ env: { CATALOG_PATH: CATALOG } });
  official = new OpenAI({ baseURL: cluster.baseUrl, apiKey: cluster.apiKey, maxRetries: 0 });
});

afterAll(async () => {
  await cluster?.stop();
});

/** What the gateway answers to the system prompt and question with this seed, read with the official client. */
async function reference(seed: number) {
  const completion = await official.chat.completions.create({
    model: MODEL,
    seed,
    messages: [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: QUESTION },
    ],
  });
  const choice = completion.choices[0]!;
  expect(choice.finish_reason).toBe('stop');
  expect(choice.message.content).toBeTruthy();
  return { text: choice.message.content!, usage: completion.usage! };
}

/** Asserts that a parsed tool input is what get_weather's schema asks for. */
function expectWeatherInput(input: unknown): void {
  expect(weatherInput.safeParse(input).success).toBe(true);
}

describe('Vercel AI SDK (ai with @ai-sdk/openai, chat completions)', () => {
  const model = (apiKey?: string, id = MODEL): LanguageModel => createOpenAI({ baseURL: cluster.baseUrl, apiKey: apiKey ?? cluster.apiKey }).chat(id);

  it('generateText returns the text, finish reason and usage the gateway reports', async () => {
    const expected = await reference(11);
    const result = await generateText({ model: model(), system: SYSTEM, prompt: QUESTION, seed: 11, maxRetries: 0 });
    expect(result.text).toBe(expected.text);
    expect(result.finishReason).toBe('stop');
    expect(result.usage.inputTokens).toBe(expected.usage.prompt_tokens);
    expect(result.usage.outputTokens).toBe(expected.usage.completion_tokens);
    expect(result.usage.totalTokens).toBe(expected.usage.total_tokens);
    expect(result.response.id).toMatch(/^chatcmpl-/);
    expect(result.response.modelId).toBe(MODEL);
  });

  it('streamText assembles the same text, with the finish reason and usage of the final chunk', async () => {
    const expected = await reference(12);
    const result = streamText({ model: model(), system: SYSTEM, prompt: QUESTION, seed: 12, maxRetries: 0, onError: () => undefined });
    const deltas: string[] = [];
    for await (const delta of result.textStream) deltas.push(delta);
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe(expected.text);
    expect(await result.finishReason).toBe('stop');
    const usage = await result.usage;
    expect(usage.inputTokens).toBe(expected.usage.prompt_tokens);
    expect(usage.outputTokens).toBe(expected.usage.completion_tokens);
    expect(usage.totalTokens).toBe(expected.usage.total_tokens);
  });

  it('generateText returns a tool call whose input fits the zod schema', async () => {
    const result = await generateText({
      model: model(),
      prompt: WEATHER_QUESTION,
      tools: { get_weather: aiTool({ description: 'Current weather for a city', inputSchema: weatherInput }) },
      maxRetries: 0,
    });
    expect(result.finishReason).toBe('tool-calls');
    expect(result.toolCalls).toHaveLength(1);
    const call = result.toolCalls[0]!;
    expect(call.toolName).toBe('get_weather');
    expect(call.toolCallId).toBeTruthy();
    expectWeatherInput(call.input);
  });

  it('runs a tool and answers its result in a second step', async () => {
    const received: unknown[] = [];
    const result = await generateText({
      model: model(),
      prompt: WEATHER_QUESTION,
      tools: {
        get_weather: aiTool({
          description: 'Current weather for a city',
          inputSchema: weatherInput,
          execute: async (input) => {
            received.push(input);
            return { temperature: 3 };
          },
        }),
      },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    expect(received).toHaveLength(1);
    expectWeatherInput(received[0]);
    expect(result.steps.map((step) => step.finishReason)).toEqual(['tool-calls', 'stop']);
    expect(result.text).toBeTruthy();
  });

  it('streamText assembles a streamed tool call equal to the whole one', async () => {
    const tools = { get_weather: aiTool({ description: 'Current weather for a city', inputSchema: weatherInput }) };
    const whole = await generateText({ model: model(), prompt: WEATHER_QUESTION, tools, maxRetries: 0 });
    const result = streamText({ model: model(), prompt: WEATHER_QUESTION, tools, maxRetries: 0, onError: () => undefined });
    const toolCalls = await result.toolCalls;
    expect(await result.finishReason).toBe('tool-calls');
    expect(toolCalls).toHaveLength(1);
    expect(toolCalls[0]!.toolName).toBe('get_weather');
    expect(toolCalls[0]!.toolCallId).toBe(whole.toolCalls[0]!.toolCallId);
    expect(toolCalls[0]!.input).toEqual(whole.toolCalls[0]!.input);
    expectWeatherInput(toolCalls[0]!.input);
  });

  it('maps a bad key to an APICallError with status 401', async () => {
    const error = await generateText({ model: model('br-not-a-real-key'), prompt: QUESTION, maxRetries: 0 }).catch((caught: unknown) => caught);
    expect(APICallError.isInstance(error)).toBe(true);
    const apiError = error as APICallError;
    expect(apiError.statusCode).toBe(401);
    expect(apiError.isRetryable).toBe(false);
    expect(apiError.message).toBeTruthy();
  });

  it('maps an unknown model to an APICallError with status 404', async () => {
    const error = await generateText({ model: model(undefined, 'no-such-model'), prompt: QUESTION, maxRetries: 0 }).catch((caught: unknown) => caught);
    expect(APICallError.isInstance(error)).toBe(true);
    expect((error as APICallError).statusCode).toBe(404);
    expect((error as APICallError).message).toMatch(/no-such-model/);
  });

  it('stops at maxOutputTokens with finish reason length', async () => {
    const result = await generateText({ model: model(), prompt: QUESTION, maxOutputTokens: 5, maxRetries: 0 });
    expect(result.finishReason).toBe('length');
    expect(result.usage.outputTokens).toBe(5);
    expect(result.text).toBeTruthy();
  });

  it('returns structured output that fits the zod schema', async () => {
    const result = await generateText({ model: model(), prompt: 'Facts about Oslo.', output: Output.object({ schema: cityFacts }), maxRetries: 0 });
    expect(cityFacts.safeParse(result.output).success).toBe(true);
  });

  it('reports a failure in the middle of a stream as an error, not as a finished answer', async () => {
    const errors: unknown[] = [];
    const result = streamText({
      model: model(),
      prompt: `${QUESTION} [[simulate:fail_after=3]]`,
      maxRetries: 0,
      onError: ({ error }) => {
        errors.push(error);
      },
    });
    const parts: string[] = [];
    for await (const part of result.fullStream) parts.push(part.type);
    expect(parts).toContain('text-delta');
    expect(parts).toContain('error');
    expect(errors).not.toHaveLength(0);
    expect(await result.finishReason).toBe('error');
  });

  it('maps an upstream failure to a retryable APICallError with a 5xx status', async () => {
    const error = await generateText({ model: model(), prompt: `${QUESTION} [[simulate:error=503]]`, maxRetries: 0 }).catch((caught: unknown) => caught);
    expect(APICallError.isInstance(error)).toBe(true);
    expect((error as APICallError).statusCode).toBeGreaterThanOrEqual(500);
    expect((error as APICallError).isRetryable).toBe(true);
  });
});

describe('LangChain (@langchain/openai ChatOpenAI)', () => {
  const chat = (apiKey?: string) =>
    new ChatOpenAI({ model: MODEL, apiKey: apiKey ?? cluster.apiKey, configuration: { baseURL: cluster.baseUrl }, maxRetries: 0 });
  const conversation = () => [new SystemMessage(SYSTEM), new HumanMessage(QUESTION)];
  const weatherTool = langchainTool(async () => ({ temperature: 3 }), { name: 'get_weather', description: 'Current weather for a city', schema: weatherInput });

  it('invoke returns the content and usage metadata the gateway reports', async () => {
    const expected = await reference(21);
    const message = await chat().invoke(conversation(), { seed: 21 });
    expect(message.content).toBe(expected.text);
    expect(message.usage_metadata?.input_tokens).toBe(expected.usage.prompt_tokens);
    expect(message.usage_metadata?.output_tokens).toBe(expected.usage.completion_tokens);
    expect(message.usage_metadata?.total_tokens).toBe(expected.usage.total_tokens);
    expect(message.response_metadata.finish_reason).toBe('stop');
  });

  it('stream yields chunks that concatenate to the same text and usage', async () => {
    const expected = await reference(22);
    const chunks: AIMessageChunk[] = [];
    for await (const chunk of await chat().stream(conversation(), { seed: 22 })) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(2);
    const whole = chunks.reduce((sum, chunk) => sum.concat(chunk));
    expect(whole.content).toBe(expected.text);
    expect(whole.usage_metadata?.input_tokens).toBe(expected.usage.prompt_tokens);
    expect(whole.usage_metadata?.output_tokens).toBe(expected.usage.completion_tokens);
    expect(whole.usage_metadata?.total_tokens).toBe(expected.usage.total_tokens);
  });

  it('bindTools + invoke returns tool_calls with parsed args', async () => {
    const message = await chat().bindTools([weatherTool]).invoke(WEATHER_QUESTION);
    expect(message.tool_calls).toHaveLength(1);
    const call = message.tool_calls![0]!;
    expect(call.name).toBe('get_weather');
    expect(call.id).toBeTruthy();
    expectWeatherInput(call.args);
    expect(message.invalid_tool_calls ?? []).toEqual([]);
  });

  it('bindTools + stream assembles the same tool call as invoke', async () => {
    const model = chat().bindTools([weatherTool]);
    const invoked = await model.invoke(WEATHER_QUESTION);
    const chunks: AIMessageChunk[] = [];
    for await (const chunk of await model.stream(WEATHER_QUESTION)) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(1);
    const whole = chunks.reduce((sum, chunk) => sum.concat(chunk));
    expect(whole.tool_calls).toHaveLength(1);
    expect(whole.tool_calls![0]).toEqual(invoked.tool_calls![0]);
    expectWeatherInput(whole.tool_calls![0]!.args);
    expect(whole.invalid_tool_calls ?? []).toEqual([]);
  });

  it('withStructuredOutput returns an object that fits the zod schema', async () => {
    const facts = await chat().withStructuredOutput(cityFacts, { name: 'city_facts' }).invoke('Facts about Oslo.');
    expect(cityFacts.safeParse(facts).success).toBe(true);
  });

  it('rejects a stream that fails in the middle instead of ending it quietly', async () => {
    const received: string[] = [];
    const consume = async () => {
      for await (const chunk of await chat().stream(`${QUESTION} [[simulate:fail_after=3]]`)) received.push(String(chunk.content));
    };
    await expect(consume()).rejects.toThrow();
    expect(received.join('')).toBeTruthy();
  });

  it('surfaces a bad key as an error with status 401', async () => {
    const error = await chat('br-not-a-real-key')
      .invoke(QUESTION)
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Error);
    expect((error as { status?: number }).status).toBe(401);
  });
});
