/**
 * Anthropic's Message Batches API on the batch service: POST /v1/messages/batches (a batch of its
 * requests inline, each `{custom_id, params}` sent by the batch lane to /v1/messages with the
 * caller's key), GET /v1/messages/batches (a page, newest first, `after_id` / `before_id`), GET
 * /v1/messages/batches/{id}, POST /v1/messages/batches/{id}/cancel, GET
 * /v1/messages/batches/{id}/results (the results file, JSON Lines, streamed) and DELETE
 * /v1/messages/batches/{id} (a batch that ended). Every route reads the key as /v1/messages does
 * (`x-api-key` or a bearer token), checks it without counting a request, and answers errors in
 * Anthropic's envelope; another key's batch, an OpenAI batch and an unknown id are all a 404
 * (`not_found_error`). Without a batch service every route is a 404 that says so.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type {
  BatchInfoOutput,
  CancelBatchRequest,
  CreateMessageBatchRequest,
  DeleteBatchRequest,
  DeleteBatchResponseOutput,
  GetBatchRequest,
  ListBatchesRequest,
  ListBatchesResponseOutput,
} from '@gateway/proto';
import type { EdgeDependencies } from '../../dependencies.js';
import { edgeError } from '../../error-codes.js';
import { messagesErrors } from '../../wire/messages-output.js';
import { type BatchCaller, batchCaller, callBatch } from './batch-calls.js';
import { fileContent } from './files.js';
import {
  batchEnded,
  deletedMessageBatchJson,
  type MessageBatchJson,
  type MessageBatchListJson,
  messageBatchJson,
  messageBatchListJson,
} from './message-batch-objects.js';

type BatchRequest = FastifyRequest<{ Params: { id: string } }>;

/** The `api` of the batch service's Anthropic batches. */
const ANTHROPIC_API = 'anthropic';
/** The ids of Anthropic batches. */
const MESSAGE_BATCH_ID = /^msgbatch_[A-Za-z0-9]{1,64}$/;

/** Every route's errors and key as /v1/messages answers and reads them. */
const config = { wire: messagesErrors };

/** Where the caller reached the edge (scheme and host): the origin of `results_url`. */
function origin(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

/** Anthropic's 404 of a batch the key cannot see. */
const notFound = (id: string) => edgeError('not_found', `No message batch found with id ${JSON.stringify(id.slice(0, 100))}.`);

/** A 400 naming its param. */
const invalid = (message: string, param: string) => edgeError('invalid_value', message, { param });

/** The key's Anthropic batch of the id; a 404 for an id of another form, another key's, or an OpenAI batch. */
async function messageBatch(deps: EdgeDependencies, request: BatchRequest, caller: BatchCaller): Promise<BatchInfoOutput> {
  const id = request.params.id;
  if (!MESSAGE_BATCH_ID.test(id)) throw notFound(id);
  const batch = await callBatch<GetBatchRequest, BatchInfoOutput>(deps, request, caller, caller.batch.GetBatch, { owner: caller.owner, batch_id: id });
  if (batch.api !== ANTHROPIC_API) throw notFound(id);
  return batch;
}

/** The `requests` of a create body as JSON Lines (one request a line); a 400 for a body of another form. */
function requestsJsonl(body: unknown): string {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('The body must be a JSON object with `requests`.', 'requests');
  const { requests, ...rest } = body as { requests?: unknown };
  const extra = Object.keys(rest)[0];
  if (extra !== undefined) throw invalid(`${extra.slice(0, 100)}: Extra inputs are not permitted.`, extra.slice(0, 100));
  if (!Array.isArray(requests) || requests.length === 0) throw invalid('`requests` must be a non-empty list of `{custom_id, params}`.', 'requests');
  return requests.map((item) => JSON.stringify(item ?? null)).join('\n');
}

/** A query value as one string; a 400 for a repeated one. */
function queryValue(query: Record<string, unknown>, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw invalid(`\`${name}\` must be given once.`, name);
  return value;
}

/** The page GET /v1/messages/batches asks for: `limit` (1 to 1,000, 20 by default), `after_id` or `before_id`. */
function listPage(query: Record<string, unknown>): { limit: number; after: string; before: string } {
  const limit = queryValue(query, 'limit');
  const after = queryValue(query, 'after_id') ?? '';
  const before = queryValue(query, 'before_id') ?? '';
  if (limit !== undefined && !/^(?:[1-9][0-9]{0,2}|1000)$/.test(limit)) throw invalid('`limit` must be an integer from 1 to 1000.', 'limit');
  for (const [name, value] of [
    ['after_id', after],
    ['before_id', before],
  ] as const)
    if (value && !MESSAGE_BATCH_ID.test(value)) throw invalid(`\`${name}\` must be a message batch id (msgbatch_...).`, name);
  if (after && before) throw invalid('Give `after_id` or `before_id`, not both.', 'before_id');
  return { limit: limit === undefined ? 0 : Number(limit), after, before };
}

/** Registers the Message Batches API's routes. */
export function registerMessageBatches(app: FastifyInstance, deps: EdgeDependencies): void {
  app.post('/v1/messages/batches', { config }, async (request): Promise<MessageBatchJson> => {
    const caller = await batchCaller(deps, request);
    const requests_jsonl = requestsJsonl(request.body);
    const batch = await callBatch<CreateMessageBatchRequest, BatchInfoOutput>(deps, request, caller, caller.batch.CreateMessageBatch, {
      owner: caller.owner,
      api_key: caller.apiKey,
      requests_jsonl,
    });
    return messageBatchJson(batch, origin(request));
  });

  app.get('/v1/messages/batches', { config }, async (request): Promise<MessageBatchListJson> => {
    const caller = await batchCaller(deps, request);
    const page = listPage(request.query as Record<string, unknown>);
    const found = await callBatch<ListBatchesRequest, ListBatchesResponseOutput>(deps, request, caller, caller.batch.ListBatches, {
      owner: caller.owner,
      api: ANTHROPIC_API,
      ...page,
    });
    const at = origin(request);
    return messageBatchListJson(
      (found.batches ?? []).map((batch) => messageBatchJson(batch, at)),
      found.has_more ?? false,
    );
  });

  app.get('/v1/messages/batches/:id', { config }, async (request: BatchRequest): Promise<MessageBatchJson> => {
    const caller = await batchCaller(deps, request);
    return messageBatchJson(await messageBatch(deps, request, caller), origin(request));
  });

  app.post('/v1/messages/batches/:id/cancel', { config }, async (request: BatchRequest): Promise<MessageBatchJson> => {
    const caller = await batchCaller(deps, request);
    await messageBatch(deps, request, caller);
    const batch = await callBatch<CancelBatchRequest, BatchInfoOutput>(deps, request, caller, caller.batch.CancelBatch, {
      owner: caller.owner,
      batch_id: request.params.id,
    });
    return messageBatchJson(batch, origin(request));
  });

  app.get('/v1/messages/batches/:id/results', { config }, async (request: BatchRequest, reply) => {
    const caller = await batchCaller(deps, request);
    const batch = await messageBatch(deps, request, caller);
    if (!batchEnded(batch) || !batch.output_file_id)
      throw invalid(`Message batch ${batch.id} has not ended yet: its results can be read once its processing_status is ended.`, 'id');
    const content = await fileContent(deps, request, caller, batch.output_file_id, (cancel) => reply.raw.once('close', cancel));
    void reply.header('content-type', 'application/x-jsonl');
    return reply.send(content);
  });

  app.delete('/v1/messages/batches/:id', { config }, async (request: BatchRequest) => {
    const caller = await batchCaller(deps, request);
    await messageBatch(deps, request, caller);
    const deleted = await callBatch<DeleteBatchRequest, DeleteBatchResponseOutput>(deps, request, caller, caller.batch.DeleteBatch, {
      owner: caller.owner,
      batch_id: request.params.id,
    });
    return deletedMessageBatchJson(deleted.batch_id || request.params.id);
  });
}
