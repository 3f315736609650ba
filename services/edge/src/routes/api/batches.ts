/**
 * OpenAI's Batch API: POST /v1/batches (a batch of an uploaded batch file's lines), GET /v1/batches
 * (a page, newest first), GET /v1/batches/{id} and POST /v1/batches/{id}/cancel, each an RPC of the
 * batch service for the caller's key; another key's batch is a 404 as an unknown one is. A batch is
 * created with the caller's own key, which the batch service keeps encrypted while the batch runs:
 * its lane sends every line to the edge with it, so that each line is admitted, limited, budgeted,
 * metered and logged as the same request online. A batch of Anthropic's Message Batches API
 * (message-batches.ts) is not one of these routes': a 404 as an unknown one. Without a batch service
 * every route is a 404 that says so.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { BatchInfoOutput, CancelBatchRequest, CreateBatchRequest, GetBatchRequest, ListBatchesRequest, ListBatchesResponseOutput } from '@gateway/proto';
import type { EdgeDependencies } from '../../dependencies.js';
import { edgeError } from '../../error-codes.js';
import { compileSchemaValidator, schemaRefusal } from '../admin/schema-validation.js';
import { batchCaller, callBatch } from './batch-calls.js';
import { type BatchJson, batchJson, type ListJson, listJson } from './batch-objects.js';
import { type CreateBatchBody, CreateBatchSchema, type ListBatchesQuery, ListBatchesQuerySchema } from './batch-schemas.js';

type BatchRequest = FastifyRequest<{ Params: { id: string } }>;

/** The schema checks of a route, in the style of the usage and admin APIs (a refusal names its param). */
const validation = { validatorCompiler: compileSchemaValidator, schemaErrorFormatter: schemaRefusal };

/** A 404 for the id of an Anthropic message batch (`msgbatch_...`), which OpenAI's routes do not reach. */
function openaiId(id: string): string {
  if (id.startsWith('msgbatch_')) throw edgeError('not_found', `No such batch: ${id.slice(0, 100)}.`, { param: 'batch_id' });
  return id;
}

/** Registers the Batch API's routes. */
export function registerBatches(app: FastifyInstance, deps: EdgeDependencies): void {
  app.post<{ Body: CreateBatchBody }>('/v1/batches', { schema: { body: CreateBatchSchema }, ...validation }, async (request): Promise<BatchJson> => {
    const caller = await batchCaller(deps, request);
    const { input_file_id, endpoint, completion_window, metadata } = request.body;
    const batch = await callBatch<CreateBatchRequest, BatchInfoOutput>(deps, request, caller, caller.batch.CreateBatch, {
      owner: caller.owner,
      api_key: caller.apiKey,
      input_file_id,
      endpoint,
      completion_window,
      metadata_json: metadata ? JSON.stringify(metadata) : '',
    });
    return batchJson(batch);
  });

  app.get<{ Querystring: ListBatchesQuery }>(
    '/v1/batches',
    { schema: { querystring: ListBatchesQuerySchema }, ...validation },
    async (request): Promise<ListJson<BatchJson>> => {
      const caller = await batchCaller(deps, request);
      const { limit, after = '' } = request.query;
      const page = await callBatch<ListBatchesRequest, ListBatchesResponseOutput>(deps, request, caller, caller.batch.ListBatches, {
        owner: caller.owner,
        limit: limit === undefined ? 0 : Number(limit),
        after,
      });
      return listJson((page.batches ?? []).map(batchJson), page.has_more ?? false);
    },
  );

  app.get('/v1/batches/:id', async (request: BatchRequest): Promise<BatchJson> => {
    const caller = await batchCaller(deps, request);
    const batch = await callBatch<GetBatchRequest, BatchInfoOutput>(deps, request, caller, caller.batch.GetBatch, {
      owner: caller.owner,
      batch_id: openaiId(request.params.id),
    });
    return batchJson(batch);
  });

  app.post('/v1/batches/:id/cancel', async (request: BatchRequest): Promise<BatchJson> => {
    const caller = await batchCaller(deps, request);
    const batch = await callBatch<CancelBatchRequest, BatchInfoOutput>(deps, request, caller, caller.batch.CancelBatch, {
      owner: caller.owner,
      batch_id: openaiId(request.params.id),
    });
    return batchJson(batch);
  });
}
