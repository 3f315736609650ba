import { describe, expect, it } from 'vitest';
import { callUnary, type GatewayError, StreamedCalls } from '@gateway/grpc';
import type { EmbedRequest, EmbedResponseOutput, ExecuteResponseOutput, ExecutorServiceClient } from '@gateway/proto';
import { eventually, simulatedModel } from '@gateway/testing';
import { countTextTokens } from '@gateway/tokens';
import { vectorOfBytes } from '../providers/embedding-vectors.js';
import type { EmbeddingBatch, Provider } from '../providers/provider.js';
import { SimulatedProvider } from '../providers/simulated/simulated-provider.js';
import { useExecutorOfProvider } from '../testing/executor-calls.js';

const EMBEDDING = simulatedModel({
  id: 'sim-embed',
  kind: 'embedding',
  embedding: { dimensions: 16, shortenable: true, batch_size: 3 },
  simulation: { time_to_first_token_ms: 0, tokens_per_second: 0 },
});
const CHAT = simulatedModel({ id: 'sim-chat' });

/** The simulated provider, recording the batches its embeddings were asked. */
function recordingProvider(): { provider: Provider; batches: EmbeddingBatch[] } {
  const provider = new SimulatedProvider();
  const batches: EmbeddingBatch[] = [];
  const embed = provider.embeddings.embed.bind(provider.embeddings);
  provider.embeddings.embed = (batch, context) => {
    batches.push(batch);
    return embed(batch, context);
  };
  return { provider, batches };
}

const start = useExecutorOfProvider([EMBEDDING, CHAT]);

const embedOf = (executor: ExecutorServiceClient, request: EmbedRequest) =>
  callUnary<EmbedRequest, EmbedResponseOutput>(executor, executor.Embed, request, { deadlineMs: 5_000 });

describe('Embed', () => {
  it('splits inputs into batches of the catalog size and answers the vectors in input order, with the tokens', async () => {
    const { provider, batches } = recordingProvider();
    const executor = await start(provider);
    const texts = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta'];
    const whole = await embedOf(executor, { request_id: 'r1', model_id: 'sim-embed', texts });
    expect(batches.map((batch) => batch.texts)).toEqual([['alpha', 'beta', 'gamma'], ['delta', 'epsilon', 'zeta'], ['eta']]);
    const tokens = texts.reduce((sum, text) => sum + countTextTokens(text), 0);
    expect(whole).toMatchObject({ provider: 'simulated', model_id: 'sim-embed', usage: { prompt_tokens: tokens, total_tokens: tokens } });
    const vectors = (whole.embeddings ?? []).map((embedding) => Array.from(vectorOfBytes(embedding.float32_le!)!));
    expect(vectors).toHaveLength(7);
    // Each vector is the one its text gets alone.
    for (const [index, text] of texts.entries()) {
      const alone = await embedOf(executor, { request_id: 'r2', model_id: 'sim-embed', texts: [text] });
      expect(Array.from(vectorOfBytes(alone.embeddings![0]!.float32_le!)!)).toEqual(vectors[index]);
    }
  });

  it('answers the same on a CompleteCalls stream, and shortens to dimensions', async () => {
    const executor = await start(recordingProvider().provider);
    const streamed = new StreamedCalls<{ embed: [EmbedRequest, EmbedResponseOutput] }>({
      open: () => executor.CompleteCalls(),
      streams: 1,
      cancellable: true,
      unary: { embed: () => Promise.reject(new Error('the CompleteCalls stream is not open')) },
    });
    await eventually(() => streamed.openStreams === 1, 'the stream to open');
    const request = { request_id: 'r3', model_id: 'sim-embed', token_arrays: [{ tokens: [1, 2, 3] }], dimensions: 4 };
    const [onStream, unaryAnswer] = await Promise.all([streamed.call('embed', request, { deadlineMs: 5_000 }), embedOf(executor, request)]);
    expect(onStream).toEqual(unaryAnswer);
    expect(vectorOfBytes(onStream.embeddings![0]!.float32_le!)).toHaveLength(4);
    expect(onStream.usage?.prompt_tokens).toBe(3);
    await streamed.close(100);
  });

  it('refuses a chat model, a dimensions past the model, and an embedding model on Complete, as INVALID_ARGUMENT naming the field', async () => {
    const executor = await start(recordingProvider().provider);
    const refusal = (promise: Promise<unknown>) =>
      promise.then(
        () => undefined,
        (error: unknown) => error as GatewayError,
      );
    expect(await refusal(embedOf(executor, { request_id: 'r4', model_id: 'sim-chat', texts: ['a'] }))).toMatchObject({
      reason: 'invalid_value',
      param: 'model',
    });
    expect(await refusal(embedOf(executor, { request_id: 'r5', model_id: 'sim-embed', texts: ['a'], dimensions: 17 }))).toMatchObject({
      reason: 'invalid_value',
      param: 'dimensions',
    });
    const complete = callUnary<object, ExecuteResponseOutput>(
      executor,
      executor.Complete,
      { request_id: 'r6', model_id: 'sim-embed', request: { model: 'sim-embed', messages: [{ role: 'ROLE_USER', text: 'hi' }] } },
      { deadlineMs: 5_000 },
    );
    expect(await refusal(complete)).toMatchObject({ reason: 'invalid_value', param: 'model' });
  });
});
