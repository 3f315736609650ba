/**
 * Embed: an embeddings request run on its model's deployments with the completions' retries and
 * breakers (a CompletionRun without fallbacks: another model's vectors live in another space).
 * The inputs are split into batches of at most the provider's limit (the catalog's
 * embedding.batch_size, else the adapter's batchSize), sent a few at a time, and their vectors
 * joined in the order of the inputs; a batch that fails fails the try, and the retry sends every
 * batch again. The usage is the upstream's count, or the gateway tokenizer's where an upstream
 * reports none.
 */
import type { CatalogModel } from '@gateway/catalog';
import { GatewayError, unary } from '@gateway/grpc';
import type { EmbedRequestOutput, EmbedResponse, ExecutorServiceHandlers, Usage } from '@gateway/proto';
import { countTextTokensAsync } from '@gateway/tokens';
import { float32Bytes } from '../providers/embedding-vectors.js';
import type { EmbeddingBatch, EmbeddingProvider, Provider, ProviderContext } from '../providers/provider.js';
import { listenToCall } from './call-bounds.js';
import { type Answer, type CallBounds, CompletionRun, type RunServices } from './completion-run.js';

/** How many batches of one request are in flight upstream at once. */
const PARALLEL_BATCHES = 4;

/** The batches of a request: consecutive inputs, at most `size` each, in order. */
export function batchesOf(request: Pick<EmbeddingBatch, 'texts' | 'tokenArrays' | 'dimensions' | 'user'>, size: number): EmbeddingBatch[] {
  const batches: EmbeddingBatch[] = [];
  const { texts, tokenArrays, dimensions, user } = request;
  for (let start = 0; start < texts.length; start += size) batches.push({ texts: texts.slice(start, start + size), tokenArrays: [], dimensions, user });
  for (let start = 0; start < tokenArrays.length; start += size)
    batches.push({ texts: [], tokenArrays: tokenArrays.slice(start, start + size), dimensions, user });
  return batches;
}

/** The adapter's embeddings for a model, or the INVALID_ARGUMENT its caller gets. */
function embeddingsOf(provider: Provider, model: CatalogModel, request: EmbeddingBatch): EmbeddingProvider {
  if (model.kind !== 'embedding' || !provider.embeddings) {
    throw GatewayError.of(
      'invalid_value',
      `The model \`${model.id}\` is a chat model and does not produce embeddings; use an embedding model with /v1/embeddings.`,
      {
        param: 'model',
      },
    );
  }
  if (provider.embeddings.textOnly && request.tokenArrays.length > 0) {
    throw GatewayError.of('invalid_value', `The model \`${model.id}\` takes text inputs only; send 'input' as strings rather than token ids.`, {
      param: 'input',
    });
  }
  const dimensions = model.embedding?.dimensions ?? 0;
  if (request.dimensions > 0 && dimensions > 0 && (request.dimensions > dimensions || (!model.embedding?.shortenable && request.dimensions !== dimensions))) {
    throw GatewayError.of(
      'invalid_value',
      model.embedding?.shortenable
        ? `'dimensions' must be at most ${dimensions} for the model \`${model.id}\`.`
        : `The model \`${model.id}\` does not take 'dimensions'; remove it (its vectors have ${dimensions}).`,
      { param: 'dimensions' },
    );
  }
  return provider.embeddings;
}

/** Embeds every batch, PARALLEL_BATCHES at a time; the vectors in input order and the summed usage. */
async function embedAll(embeddings: EmbeddingProvider, model: CatalogModel, request: EmbeddingBatch, context: ProviderContext) {
  const batches = batchesOf(request, Math.max(1, model.embedding?.batch_size ?? embeddings.batchSize));
  const results = new Array<Awaited<ReturnType<EmbeddingProvider['embed']>>>(batches.length);
  let next = 0;
  const worker = async () => {
    while (next < batches.length) {
      const index = next;
      next += 1;
      results[index] = await embeddings.embed(batches[index]!, context);
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_BATCHES, batches.length) }, worker));
  let promptTokens = 0;
  for (const [index, result] of results.entries()) {
    const batch = batches[index]!;
    if (result.vectors.length !== batch.texts.length + batch.tokenArrays.length) {
      throw GatewayError.of('upstream_error', 'The upstream answered a different number of embeddings than inputs.');
    }
    promptTokens += result.promptTokens ?? (await countedTokens(batch));
  }
  return { vectors: results.flatMap((result) => result.vectors), promptTokens };
}

/** The gateway tokenizer's count of a batch, for upstreams that report none. */
async function countedTokens(batch: EmbeddingBatch): Promise<number> {
  let tokens = 0;
  for (const text of batch.texts) tokens += await countTextTokensAsync(text);
  for (const ids of batch.tokenArrays) tokens += ids.length;
  return tokens;
}

/** Runs an Embed call; rejects with the failure to answer the caller with. */
export async function runEmbed(embed: EmbedRequestOutput, bounds: CallBounds, services: RunServices): Promise<EmbedResponse> {
  const run = new CompletionRun(services, embed, bounds, 'Embed');
  const { recorder } = services;
  const request: EmbeddingBatch = {
    texts: embed.texts ?? [],
    tokenArrays: (embed.token_arrays ?? []).map((array) => array.tokens ?? []),
    dimensions: Math.max(0, embed.dimensions ?? 0),
    user: embed.user ?? '',
  };
  try {
    if (request.texts.length === 0 && request.tokenArrays.length === 0)
      throw GatewayError.of('invalid_request', 'The embed request carries no input.', { param: 'input' });
    const result = await run.start(async (provider, context, upstream) => {
      const answered = await embedAll(embeddingsOf(provider, context.model, request), context.model, request, context);
      recorder.endUpstream(upstream, { label: 'ok', usage: usageOf(answered.promptTokens) });
      return answered;
    });
    run.release();
    const answer = run.answer as Answer;
    const usage = usageOf(result.promptTokens);
    run.succeed({ label: 'ok', usage });
    return {
      embeddings: result.vectors.map((vector) => ({ float32_le: float32Bytes(vector) })),
      usage,
      provider: answer.provider.name,
      model_id: answer.model.id,
      attempts: answer.attempts,
      deployment_id: answer.deploymentId,
    };
  } catch (error) {
    throw run.fail(run.outcomeOf(error));
  }
}

function usageOf(promptTokens: number): Usage {
  return { prompt_tokens: promptTokens, completion_tokens: 0, total_tokens: promptTokens, cached_tokens: 0, reasoning_tokens: 0 };
}

/** The Embed handler. */
export function embedHandler(services: RunServices): ExecutorServiceHandlers['Embed'] {
  return unary<EmbedRequestOutput, EmbedResponse>(
    async (embed, call) => {
      const { bounds, stopListening } = listenToCall(call);
      try {
        return await runEmbed(embed, bounds, services);
      } finally {
        stopListening();
      }
    },
    'Embed',
    services.report,
  );
}
