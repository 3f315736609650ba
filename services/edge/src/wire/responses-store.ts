/**
 * Stored responses of the Responses API, as OpenAI defines them, kept by metering's
 * ResponseStoreService (the edge keeps no state):
 * - `store` (true unless the body says false): once a response completed (or ended incomplete),
 *   the Response object as answered and the input items that led to it (the earlier conversation,
 *   then this request's input) are stored under the key id that created it. The store is fired
 *   as the answer's last bytes go out, never awaited by the answer; a failure is logged and
 *   counted (gateway_responses_store_total), never the caller's error.
 * - `previous_response_id`: before the body is parsed, the stored conversation (its input items,
 *   then its output items) is put before this request's input; `instructions` are not carried
 *   over (OpenAI's rule). Unknown, expired, deleted or another key's: 400
 *   `previous_response_not_found`.
 * - reading back and deleting for GET and DELETE /v1/responses/{id} (routes/api/responses.ts).
 */
import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { callUnary } from '@gateway/grpc';
import { metric, type prometheus, serviceMetrics } from '@gateway/observability';
import type {
  DeleteResponseResponseOutput,
  GetResponseRequest,
  GetResponseResponseOutput,
  PutResponseRequest,
  PutResponseResponseOutput,
} from '@gateway/proto';
import { bearerKey, checkKey, noteKeyChecked } from '../auth/key-check.js';
import type { EdgeDependencies } from '../dependencies.js';
import { RequestError } from '../request-error.js';
import type { ResponsesCompletion } from './responses-output.js';
import { isObject, type JsonObject } from './translated-request.js';

/** Which stored response a read or a delete is about (GetResponseRequest and DeleteResponseRequest alike). */
type ResponseRef = Required<Pick<GetResponseRequest, 'key_id' | 'response_id'>>;

/** A stored response as read back: the Response object and the input items that led to it. */
export interface StoredResponse {
  response: JsonObject;
  inputItems: JsonObject[];
}

/** What a Responses request carries from its preparation to its answer. */
interface StoreSession {
  store: ResponsesStore;
  /** Store the answer (`store` not false). */
  keep: boolean;
  /** The whole conversation as input items: the earlier one, then this request's input. */
  inputItems: JsonObject[];
  /** The response this one continues, when it does. */
  previousResponseId: string | null;
}

const sessions = new WeakMap<FastifyRequest, StoreSession>();
const stores = new WeakMap<EdgeDependencies, ResponsesStore>();

/** A request's `input` as input items (a string is one user message); undefined when it is neither, for the parser to refuse. */
export function inputItemsOf(input: unknown): JsonObject[] | undefined {
  if (typeof input === 'string') return [{ type: 'message', role: 'user', content: input }];
  return Array.isArray(input) ? (input as JsonObject[]) : undefined;
}

/**
 * The conversation a stored response ends: its input items, then its output items (each as the
 * input item it is: messages, function and custom tool calls; the parser drops the rest).
 */
export function conversationOf(stored: StoredResponse): JsonObject[] {
  const output = Array.isArray(stored.response.output) ? (stored.response.output as JsonObject[]) : [];
  return [...stored.inputItems, ...output];
}

/**
 * An input item as stored, and listed, in OpenAI's shape: with an id of its own (`msg_` for a
 * message, `item_` for any other) so that listing the items of a response can page by id (one
 * that has an id keeps it), and a message's string content as the one text part it means
 * (`output_text` for the assistant's, `input_text` for the others').
 */
export function withItemId(item: JsonObject): JsonObject {
  const message = item.type === undefined || item.type === 'message';
  const content =
    message && typeof item.content === 'string' ? { content: [{ type: item.role === 'assistant' ? 'output_text' : 'input_text', text: item.content }] } : {};
  if (typeof item.id === 'string' && item.id !== '') return { ...item, ...content };
  return { id: `${message ? 'msg' : 'item'}_${randomUUID().replaceAll('-', '')}`, ...(message ? { type: 'message' } : {}), ...item, ...content };
}

/** The 400 of a `previous_response_id` no stored response of the key has, in OpenAI's words. */
export function previousResponseNotFound(id: unknown): RequestError {
  return new RequestError(400, `Previous response with id '${String(id).slice(0, 64)}' not found.`, {
    param: 'previous_response_id',
    code: 'previous_response_not_found',
  });
}

/** The key id of a request's API key: a check of the key only (nothing counted, nothing reserved). */
export async function keyIdOf(request: FastifyRequest, deps: EdgeDependencies): Promise<string> {
  noteKeyChecked(request);
  const decision = await checkKey(deps, bearerKey(request), request.id);
  return decision.key_id ?? '';
}

/** Metering's ResponseStoreService as the edge uses it, with its metric. */
export class ResponsesStore {
  private readonly stored: prometheus.Counter<'outcome'>;
  /** Puts this edge has in flight, by response id: a read of one waits for it. */
  private readonly pending = new Map<string, Promise<unknown>>();

  constructor(private readonly deps: EdgeDependencies) {
    // biome-ignore format: one metric a line, a table of name, help and the label it is counted by
    this.stored = serviceMetrics(deps.registry, {
      stored: metric.counterBy('gateway_responses_store_total', 'Responses the edge stored for the Responses API (store: true), by outcome: stored; too_large (over the store bound, not stored); failed (the store could not be reached: logged).', 'outcome', ['stored', 'too_large', 'failed']),
    }).stored;
  }

  /** The store of an edge, made once per edge. */
  static of(deps: EdgeDependencies): ResponsesStore {
    let store = stores.get(deps);
    if (!store) {
      store = new ResponsesStore(deps);
      stores.set(deps, store);
    }
    return store;
  }

  private options(requestId: string) {
    return { deadlineMs: this.deps.config.EDGE_CONTROL_DEADLINE_MS, requestId };
  }

  /** A key's stored response, or undefined when it has none by that id. */
  async get(keyId: string, responseId: string, requestId: string): Promise<StoredResponse | undefined> {
    const found = await this.byId<GetResponseResponseOutput>('GetResponse', { key_id: keyId, response_id: responseId }, requestId);
    if (!found.found) return undefined;
    return { response: JSON.parse(found.response_json ?? '{}') as JsonObject, inputItems: JSON.parse(found.input_items_json || '[]') as JsonObject[] };
  }

  /** Deletes a key's stored response; false when it had none by that id. */
  async delete(keyId: string, responseId: string, requestId: string): Promise<boolean> {
    const answer = await this.byId<DeleteResponseResponseOutput>('DeleteResponse', { key_id: keyId, response_id: responseId }, requestId);
    return answer.deleted === true;
  }

  /** A call about one stored response, once a put of it this edge has in flight is done. */
  private async byId<Response>(method: 'GetResponse' | 'DeleteResponse', request: ResponseRef, requestId: string): Promise<Response> {
    await this.pending.get(request.response_id);
    const client = this.deps.responseStore;
    return callUnary<ResponseRef, Response>(client, client[method] as never, request, this.options(requestId));
  }

  /**
   * Waits until every put this edge has in flight is done, or `timeoutMs` has passed: at shutdown,
   * so that a response answered with `store: true` is kept although its edge is going away.
   * Resolves with the number of puts still unfinished (0 when every one is done).
   */
  async flush(timeoutMs: number): Promise<number> {
    const pending = [...this.pending.values()];
    if (pending.length === 0) return 0;
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    });
    await Promise.race([Promise.allSettled(pending), expired]);
    clearTimeout(timer);
    return this.pending.size;
  }

  /** Stores a response without waiting: a failure is logged and counted, never thrown. */
  put(keyId: string, response: JsonObject, inputItems: readonly JsonObject[], requestId: string): void {
    const responseId = String(response.id);
    const client = this.deps.responseStore;
    const request: PutResponseRequest = {
      key_id: keyId,
      response_id: responseId,
      response_json: JSON.stringify(response),
      input_items_json: JSON.stringify(inputItems),
      answered_at_ms: Date.now(),
    };
    // Started on a later tick: the answer's bytes go out first.
    const put = Promise.resolve()
      .then(() => callUnary<PutResponseRequest, PutResponseResponseOutput>(client, client.PutResponse, request, this.options(requestId)))
      .then((answer) => this.stored.inc({ outcome: answer.outcome === 'PUT_OUTCOME_TOO_LARGE' ? 'too_large' : 'stored' }))
      .catch((error: unknown) => {
        this.stored.inc({ outcome: 'failed' });
        this.deps.logger.warn({ request_id: requestId, err: { message: (error as Error).message }, response_id: responseId }, 'storing a response failed');
      })
      .finally(() => this.pending.delete(responseId));
    this.pending.set(responseId, put);
  }
}

/**
 * The Responses wire's preparation of a body: the conversation of its `previous_response_id`
 * put before its input, and what its answer is stored with. A body that is not an object is
 * left for the parser to refuse.
 */
export async function prepareResponsesRequest(request: FastifyRequest, deps: EdgeDependencies): Promise<void> {
  const body = request.body;
  if (!isObject(body)) return;
  const store = ResponsesStore.of(deps);
  const previous = body.previous_response_id;
  let inputItems = inputItemsOf(body.input);
  let previousResponseId: string | null = null;
  if (previous !== undefined && previous !== null) {
    if (typeof previous !== 'string' || previous === '') throw previousResponseNotFound(previous);
    const keyId = await keyIdOf(request, deps);
    const stored = await store.get(keyId, previous, request.id);
    if (!stored) throw previousResponseNotFound(previous);
    // A malformed input is still refused by the parser, under its own name.
    if (inputItems) {
      inputItems = [...conversationOf(stored), ...inputItems];
      body.input = inputItems;
    }
    delete body.previous_response_id;
    previousResponseId = previous;
  }
  sessions.set(request, { store, keep: body.store !== false, inputItems: inputItems ?? [], previousResponseId });
}

/** The Response fields the request's preparation decides: which response it continues. */
export function storedFields(completion: ResponsesCompletion): JsonObject {
  const session = sessions.get(completion.request);
  return session?.previousResponseId ? { previous_response_id: session.previousResponseId } : {};
}

/** Stores a finished Response object of a request with `store` (not failed ones); returns at once. */
export function keepResponse(completion: ResponsesCompletion, response: JsonObject): void {
  const session = sessions.get(completion.request);
  const keyId = completion.decision?.key_id;
  if (!session?.keep || !keyId || response.status === 'failed') return;
  session.store.put(keyId, response, session.inputItems.map(withItemId), completion.requestId);
}
