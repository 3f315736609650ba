/**
 * The in-process simulated provider: answers deterministically (see completion-plan.ts), with the
 * catalog's simulated latency (time to first token, tokens per second) honoured by abortable
 * timers, and prompt-driven failure hooks (see simulation-directives.ts) so the cluster's error
 * paths can be exercised without a real upstream.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ChatChunk, ChatRequestOutput, ChatResponse, ChunkChoice } from '@gateway/proto';
import type { Provider, ProviderContext, ProviderStreamEvent } from '../provider.js';
import { UpstreamError } from '../upstream-error.js';
import { SimulatedEmbeddings } from './simulated-embeddings.js';
import { planCompletion, type CompletionPlan, type PlannedChoice } from './completion-plan.js';
import { parseSimulationDirectives, type SimulationDirectives } from './simulation-directives.js';
import { SIMULATED_PROVIDER } from '../provider-names.js';

const SYSTEM_FINGERPRINT = 'fp_simulated';

/** The retry-after a simulated 429 sends when the prompt does not set one. */
const DEFAULT_RETRY_AFTER_MS = 1000;

/** One step of a simulated stream: the chunks sent together after one token interval. */
type Step = ChunkChoice[];

/**
 * Each choice's deltas in order: role (with the first tool call), content tokens or argument
 * fragments, finish. A content token's chunk carries that token's log probabilities when asked.
 */
function choiceDeltas(choice: PlannedChoice): ChunkChoice[] {
  const deltas: ChunkChoice[] = [];
  if (choice.toolCalls.length > 0) {
    choice.toolCalls.forEach((call, position) => {
      const opening = { index: position, id: call.id, type: 'function', function: { name: call.name, arguments: '' } };
      deltas.push({ index: choice.index, delta: position === 0 ? { role: 'ROLE_ASSISTANT', tool_calls: [opening] } : { tool_calls: [opening] } });
      for (const fragment of fragmentsOf(call.arguments)) {
        deltas.push({ index: choice.index, delta: { tool_calls: [{ index: position, function: { arguments: fragment } }] } });
      }
    });
  } else {
    // With logprobs, OpenAI's role chunk carries an empty list and each content chunk its tokens'.
    const logprobs = choice.logprobs;
    deltas.push({ index: choice.index, delta: { role: 'ROLE_ASSISTANT', content: '' }, ...(logprobs ? { logprobs: { content: { tokens: [] } } } : {}) });
    choice.pieces.forEach((piece, position) => {
      const token = logprobs?.[position];
      deltas.push({ index: choice.index, delta: { content: piece }, ...(token ? { logprobs: { content: { tokens: [token] } } } : {}) });
    });
  }
  deltas.push({ index: choice.index, delta: {}, finish_reason: choice.finishReason });
  return deltas;
}

/** Argument JSON in fragments of a few characters, as OpenAI streams them. */
function fragmentsOf(text: string): string[] {
  const fragments: string[] = [];
  for (let start = 0; start < text.length; start += 8) fragments.push(text.slice(start, start + 8));
  return fragments;
}

/** Interleaves the choices' deltas: step k holds the k-th delta of every choice that has one. */
function stepsOf(plan: CompletionPlan): Step[] {
  const perChoice = plan.choices.map(choiceDeltas);
  const length = Math.max(...perChoice.map((deltas) => deltas.length));
  const steps: Step[] = [];
  for (let index = 0; index < length; index += 1) {
    steps.push(perChoice.flatMap((deltas) => (index < deltas.length ? [deltas[index] as ChunkChoice] : [])));
  }
  return steps;
}

function usageOf(plan: CompletionPlan) {
  return {
    prompt_tokens: plan.promptTokens,
    completion_tokens: plan.completionTokens,
    total_tokens: plan.promptTokens + plan.completionTokens,
    cached_tokens: 0,
    reasoning_tokens: 0,
  };
}

/** The simulated provider. */
export class SimulatedProvider implements Provider {
  readonly name = SIMULATED_PROVIDER;
  readonly embeddings = new SimulatedEmbeddings();

  /** Waits as long as the stream of the same request would take, then answers whole. */
  async complete(request: ChatRequestOutput, context: ProviderContext): Promise<ChatResponse> {
    const directives = parseSimulationDirectives(request);
    failBeforeFirstByte(directives);
    const plan = await planCompletion(request, context.model);
    const steps = stepsOf(plan);
    const chunkCount = steps.reduce((sum, step) => sum + step.length, 0);
    const timing = timingOf(context, directives);
    if (directives.failAfterChunks !== undefined && chunkCount > directives.failAfterChunks) {
      await pause(timing.firstTokenMs + Math.max(directives.failAfterChunks - 1, 0) * timing.tokenIntervalMs, context.signal);
      throw midStreamFailure(directives.failAfterChunks);
    }
    await pause(timing.firstTokenMs + (steps.length - 1) * timing.tokenIntervalMs, context.signal);
    return {
      id: completionId(),
      created: Math.floor(Date.now() / 1000),
      model: context.model.id,
      system_fingerprint: SYSTEM_FINGERPRINT,
      choices: plan.choices.map((choice) => ({
        index: choice.index,
        finish_reason: choice.finishReason,
        ...(choice.logprobs ? { logprobs: { content: { tokens: [...choice.logprobs] } } } : {}),
        message:
          choice.toolCalls.length > 0
            ? { tool_calls: choice.toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } })) }
            : { content: choice.pieces.join('') },
      })),
      usage: usageOf(plan),
    };
  }

  /** Yields one chunk per token after the model's time to first token, then the usage. */
  async *stream(request: ChatRequestOutput, context: ProviderContext): AsyncGenerator<ProviderStreamEvent> {
    const directives = parseSimulationDirectives(request);
    failBeforeFirstByte(directives);
    const plan = await planCompletion(request, context.model);
    const timing = timingOf(context, directives);
    const id = completionId();
    const created = Math.floor(Date.now() / 1000);
    let sent = 0;
    let first = true;
    for (const step of stepsOf(plan)) {
      await pause(first ? timing.firstTokenMs : timing.tokenIntervalMs, context.signal);
      first = false;
      for (const choice of step) {
        if (directives.failAfterChunks !== undefined && sent >= directives.failAfterChunks) throw midStreamFailure(sent);
        const chunk: ChatChunk = { id, created, model: context.model.id, system_fingerprint: SYSTEM_FINGERPRINT, choices: [choice] };
        yield { type: 'chunk', chunk };
        sent += 1;
      }
    }
    yield { type: 'usage', usage: usageOf(plan) };
  }
}

function completionId(): string {
  return `chatcmpl-sim${randomBytes(12).toString('hex')}`;
}

function timingOf(context: ProviderContext, directives: SimulationDirectives): { firstTokenMs: number; tokenIntervalMs: number } {
  const simulation = context.model.simulation;
  const tokensPerSecond = simulation?.tokens_per_second ?? 0;
  return {
    firstTokenMs: directives.timeToFirstTokenMs ?? simulation?.time_to_first_token_ms ?? 0,
    tokenIntervalMs: tokensPerSecond > 0 ? 1000 / tokensPerSecond : 0,
  };
}

/** Waits, or rejects at once with the signal's AbortError when the call is cancelled. */
async function pause(milliseconds: number, signal: AbortSignal): Promise<void> {
  signal.throwIfAborted();
  if (milliseconds > 0) await sleep(milliseconds, undefined, { signal });
}

function failBeforeFirstByte(directives: SimulationDirectives): void {
  const error = directives.error;
  if (error === undefined) return;
  if (error === 'timeout') throw new UpstreamError('simulated upstream timeout', { provider: SIMULATED_PROVIDER, kind: 'timeout' });
  if (error === 'connection') throw new UpstreamError('simulated connection failure', { provider: SIMULATED_PROVIDER, kind: 'connection' });
  throw new UpstreamError(`simulated upstream status ${error}`, {
    provider: SIMULATED_PROVIDER,
    kind: 'http',
    status: error,
    retryAfterMs: directives.retryAfterMs ?? (error === 429 ? DEFAULT_RETRY_AFTER_MS : undefined),
    upstreamMessage: error === 400 || error === 422 ? 'Simulated invalid request.' : undefined,
  });
}

function midStreamFailure(chunks: number): UpstreamError {
  return new UpstreamError(`simulated stream failure after ${chunks} chunks`, { provider: SIMULATED_PROVIDER, kind: 'truncated' });
}
