/**
 * What the Files and Batch APIs accept, as TypeBox schemas with the message each fault answers with
 * (the admin API's style: routes/admin/schemas/common.ts, checked by routes/admin/schema-validation.ts):
 * the query strings of GET /v1/files and GET /v1/batches, and the body of POST /v1/batches.
 */
import { type Static, Type } from '@sinclair/typebox';
import { fieldNames, queryNames, queryParameter, steps } from '../admin/schemas/common.js';

/** The endpoints a batch's lines may call: every line's `url`. */
export const BATCH_ENDPOINTS = ['/v1/chat/completions', '/v1/responses', '/v1/embeddings'] as const;

/** The query of GET /v1/files: OpenAI's `purpose`, `limit` (1 to 10,000), `after`, and `order` (newest first only). */
export const ListFilesQuerySchema = steps(
  queryNames(['purpose', 'limit', 'after', 'order']),
  Type.Object({
    purpose: Type.Optional(queryParameter('purpose', '^[a-z_]{1,32}$', "'purpose' must be a file purpose, such as 'batch' or 'batch_output'.")),
    limit: Type.Optional(queryParameter('limit', '^(?:[1-9][0-9]{0,3}|10000)$', "'limit' must be an integer from 1 to 10000.")),
    after: Type.Optional(queryParameter('after', '^file-\\S{1,250}$', "'after' must be a file id (file-...).")),
    order: Type.Optional(queryParameter('order', '^desc$', "'order' must be 'desc': files are listed newest first.")),
  }),
);
/** The query of GET /v1/files as the route reads it. */
export type ListFilesQuery = Static<typeof ListFilesQuerySchema>;

/** The query of GET /v1/batches: OpenAI's `limit` (1 to 100) and `after`. */
export const ListBatchesQuerySchema = steps(
  queryNames(['limit', 'after']),
  Type.Object({
    limit: Type.Optional(queryParameter('limit', '^(?:[1-9][0-9]?|100)$', "'limit' must be an integer from 1 to 100.")),
    after: Type.Optional(queryParameter('after', '^batch_\\S{1,250}$', "'after' must be a batch id (batch_...).")),
  }),
);
/** The query of GET /v1/batches as the route reads it. */
export type ListBatchesQuery = Static<typeof ListBatchesQuerySchema>;

const CREATE_FIELDS = ['input_file_id', 'endpoint', 'completion_window', 'metadata'] as const;
const ENDPOINT_MESSAGE = `'endpoint' must be one of ${BATCH_ENDPOINTS.join(', ')}.`;
const METADATA_MESSAGE =
  "'metadata' must be null or an object of at most 16 pairs, each key a string of at most 64 characters and each value a string of at most 512.";

/** The body of POST /v1/batches, as OpenAI's: the batch file, its lines' endpoint, the window, metadata. */
export const CreateBatchSchema = steps(
  fieldNames(CREATE_FIELDS),
  Type.Object(
    { input_file_id: Type.Unknown(), endpoint: Type.Unknown(), completion_window: Type.Unknown() },
    {
      errorMessage: {
        required: {
          input_file_id: "'input_file_id' is required: the id of a file uploaded with purpose 'batch'.",
          endpoint: `'endpoint' is required: ${BATCH_ENDPOINTS.join(', ')}.`,
          completion_window: "'completion_window' is required: '24h'.",
        },
      },
    },
  ),
  Type.Object({
    input_file_id: Type.String({ pattern: '^file-\\S{1,250}$', errorMessage: "'input_file_id' must be a file id (file-...)." }),
    endpoint: Type.Unsafe<(typeof BATCH_ENDPOINTS)[number]>({ type: 'string', enum: [...BATCH_ENDPOINTS], errorMessage: ENDPOINT_MESSAGE }),
    completion_window: Type.Literal('24h', { errorMessage: "'completion_window' must be '24h'." }),
    metadata: Type.Optional(
      Type.Unsafe<Record<string, string> | null>({
        anyOf: [
          { type: 'null' },
          { type: 'object', maxProperties: 16, propertyNames: { maxLength: 64 }, additionalProperties: { type: 'string', maxLength: 512 } },
        ],
        errorMessage: METADATA_MESSAGE,
      }),
    ),
  }),
);
/** The body of POST /v1/batches as the route reads it. */
export type CreateBatchBody = Static<typeof CreateBatchSchema>;
