/**
 * Stored responses of the Responses API read back and deleted, as OpenAI serves them:
 *   GET    /v1/responses/{id}  the stored Response object
 *   DELETE /v1/responses/{id}  `{id, object: "response", deleted: true}`
 *   GET    /v1/responses/{id}/input_items  the input items that led to it, as a page of OpenAI's
 *          list (`order` desc by default, `limit` 1 to 100, default 20, `after` an item id)
 * A response is found only by the key that created it: unknown, expired, deleted and another
 * key's responses are all the same 404 in OpenAI's envelope. Responses are stored by the
 * Responses wire (wire/responses-store.ts) and kept by metering's ResponseStoreService.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { EdgeDependencies } from '../../dependencies.js';
import { invalid, RequestError } from '../../errors.js';
import { keyIdOf, ResponsesStore } from '../../wire/responses-store.js';

/** The 404 of a response the key has none of, in OpenAI's words. */
function responseNotFound(id: string): RequestError {
  return new RequestError(404, `Response with id '${id.slice(0, 64)}' not found.`, { code: 'not_found' });
}

/** The largest page of input items, and the default one (OpenAI's). */
const MAX_ITEMS_PAGE = 100;
const DEFAULT_ITEMS_PAGE = 20;

/** A page of a list query: the items in `order`, after the item `after` (when given), `limit` of them. */
export function itemsPage(items: ReadonlyArray<Record<string, unknown>>, query: Record<string, unknown>) {
  const order = query.order ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw invalid('order', "Invalid value for 'order': expected 'asc' or 'desc'.");
  const limit = query.limit === undefined ? DEFAULT_ITEMS_PAGE : Number(query.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_ITEMS_PAGE)
    throw invalid('limit', `Invalid value for 'limit': expected an integer from 1 to ${MAX_ITEMS_PAGE}.`);
  const ordered = order === 'asc' ? [...items] : [...items].reverse();
  const start = query.after === undefined ? 0 : ordered.findIndex((item) => item.id === query.after) + 1;
  const data = ordered.slice(start, start + limit);
  return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: start + limit < ordered.length };
}

/** Registers GET and DELETE /v1/responses/{id}, and GET /v1/responses/{id}/input_items. */
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
  app.get('/v1/responses/:id/input_items', async (request) => {
    const id = responseId(request);
    const keyId = await keyIdOf(request, deps);
    const stored = await store.get(keyId, id, request.id);
    if (!stored) throw responseNotFound(id);
    return itemsPage(stored.inputItems, request.query as Record<string, unknown>);
  });
  app.delete('/v1/responses/:id', async (request) => {
    const id = responseId(request);
    const keyId = await keyIdOf(request, deps);
    if (!(await store.delete(keyId, id, request.id))) throw responseNotFound(id);
    return { id, object: 'response', deleted: true };
  });
}
