/**
 * OpenAI's Files API, as far as batches need it: POST /v1/files (a multipart upload of a batch file,
 * streamed to the batch service: file-upload.ts), GET /v1/files (a page, newest first), GET and
 * DELETE /v1/files/{id}, and GET /v1/files/{id}/content (the file's raw bytes, streamed as the batch
 * service sends them). Each route checks the caller's key and reaches only that key's files: another
 * key's file is a 404 as an unknown one is. Without a batch service every route is a 404 that says so.
 *
 * The multipart parser (@fastify/multipart) is registered in a scope of these routes only, so that
 * every other route still refuses a form body as it did.
 */
import { Readable } from 'node:stream';
import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { callMetadata, withoutCallerStack } from '@gateway/grpc';
import type {
  DeleteFileRequest,
  DeleteFileResponseOutput,
  FileChunkOutput,
  FileInfoOutput,
  GetFileRequest,
  ListFilesRequest,
  ListFilesResponseOutput,
} from '@gateway/proto';
import type { EdgeDependencies } from '../../dependencies.js';
import { compileSchemaValidator, schemaRefusal } from '../admin/schema-validation.js';
import { type BatchCaller, batchCaller, batchFailure, callBatch } from './batch-calls.js';
import { deletedFileJson, type FileJson, fileJson, type ListJson, listJson } from './batch-objects.js';
import { type ListFilesQuery, ListFilesQuerySchema } from './batch-schemas.js';
import { FORM_LIMITS, uploadFile } from './file-upload.js';

type FileRequest = FastifyRequest<{ Params: { id: string } }>;

/**
 * A file's bytes from the batch service, once its first chunk (or its end) arrived: a file the key
 * cannot read fails here, before any byte is sent, and is answered as JSON. The rest streams as it
 * comes; a client that goes away cancels the call.
 */
export async function fileContent(
  deps: EdgeDependencies,
  request: FastifyRequest,
  caller: BatchCaller,
  fileId: string,
  onClose: (cancel: () => void) => void,
): Promise<Readable> {
  const { metadata, callOptions } = callMetadata({ deadlineMs: deps.config.EDGE_COMPLETION_DEADLINE_MS, requestId: request.id });
  const stream = withoutCallerStack(() => caller.batch.FileContent({ owner: caller.owner, file_id: fileId }, metadata, callOptions));
  onClose(() => stream.cancel());
  const chunks = (stream as AsyncIterable<FileChunkOutput>)[Symbol.asyncIterator]();
  let first: IteratorResult<FileChunkOutput>;
  try {
    first = await chunks.next();
  } catch (error) {
    throw batchFailure(deps, error, request.id);
  }
  async function* bytes(): AsyncGenerator<Buffer> {
    for (let next = first; !next.done; next = await chunks.next()) if (next.value.data?.length) yield Buffer.from(next.value.data);
  }
  return Readable.from(bytes(), { objectMode: false });
}

/** Registers the Files API's routes, and the multipart parser of their scope. */
export function registerFiles(app: FastifyInstance, deps: EdgeDependencies): void {
  void app.register(async (scope) => {
    await scope.register(multipart, { limits: { fileSize: deps.config.EDGE_MAX_FILE_BYTES, ...FORM_LIMITS } });

    scope.post('/v1/files', async (request): Promise<FileJson> => {
      const caller = await batchCaller(deps, request);
      return fileJson(await uploadFile(deps, request, caller));
    });

    scope.get<{ Querystring: ListFilesQuery }>(
      '/v1/files',
      { schema: { querystring: ListFilesQuerySchema }, validatorCompiler: compileSchemaValidator, schemaErrorFormatter: schemaRefusal },
      async (request): Promise<ListJson<FileJson>> => {
        const caller = await batchCaller(deps, request);
        const { purpose = '', limit, after = '' } = request.query;
        const page = await callBatch<ListFilesRequest, ListFilesResponseOutput>(deps, request, caller, caller.batch.ListFiles, {
          owner: caller.owner,
          purpose,
          limit: limit === undefined ? 0 : Number(limit),
          after,
        });
        return listJson((page.files ?? []).map(fileJson), page.has_more ?? false);
      },
    );

    scope.get('/v1/files/:id', async (request: FileRequest): Promise<FileJson> => {
      const caller = await batchCaller(deps, request);
      const file = await callBatch<GetFileRequest, FileInfoOutput>(deps, request, caller, caller.batch.GetFile, {
        owner: caller.owner,
        file_id: request.params.id,
      });
      return fileJson(file);
    });

    scope.delete('/v1/files/:id', async (request: FileRequest) => {
      const caller = await batchCaller(deps, request);
      const deleted = await callBatch<DeleteFileRequest, DeleteFileResponseOutput>(deps, request, caller, caller.batch.DeleteFile, {
        owner: caller.owner,
        file_id: request.params.id,
      });
      return deletedFileJson(deleted.file_id || request.params.id);
    });

    scope.get('/v1/files/:id/content', async (request: FileRequest, reply) => {
      const caller = await batchCaller(deps, request);
      const content = await fileContent(deps, request, caller, request.params.id, (cancel) => reply.raw.once('close', cancel));
      void reply.header('content-type', 'application/octet-stream');
      return reply.send(content);
    });
  });
}
