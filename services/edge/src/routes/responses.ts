/**
 * Stored responses of the Responses API read back and deleted, as OpenAI serves them:
 *   GET    /v1/responses/{id}  the stored Response object
 *   DELETE /v1/responses/{id}  `{id, object: "response", deleted: true}`
 * A response is found only by the key that created it: unknown, expired, deleted and another
 * key's responses are all the same 404 in OpenAI's envelope. Responses are stored by the
 * Responses wire (wire/responses-store.ts) and kept by metering's ResponseStoreService.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { EdgeDependencies } from '../dependencies.js';
import { RequestError } from '../errors.js';
import { keyIdOf, ResponsesStore } from '../wire/responses-store.js';

/** The 404 of a response the key has none of, in OpenAI's words. */
function responseNotFound(id: string): RequestError {
  return new RequestError(404, `Response with id '${id.slice(0, 64)}' not found.`, { code: 'not_found' });
}

/** Registers GET and DELETE /v1/responses/{id}. */
export function registerResponses(app: FastifyInstance, deps: EdgeDependencies): void {
  const store = ResponsesStore.of(deps);
  const responseId = (request: FastifyRequest) => (request.params as { id: string }).id;
  app.get('/v1/responses/:id', async (request, reply) => {
    const id = responseId(request);
    const keyId = await keyIdOf(request, deps);
    const stored = await store.get(keyId, id, request.id);
    if (!stored) throw responseNotFound(id);
    void reply.header('content-type', 'application/json');
    return JSON.stringify(stored.response);
  });
  app.delete('/v1/responses/:id', async (request) => {
    const id = responseId(request);
    const keyId = await keyIdOf(request, deps);
    if (!(await store.delete(keyId, id, request.id))) throw responseNotFound(id);
    return { id, object: 'response', deleted: true };
  });
}
