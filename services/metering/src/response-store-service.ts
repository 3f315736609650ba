/**
 * The ResponseStoreService: stored responses of OpenAI's Responses API, kept in Redis for the edge
 * (`store`, `previous_response_id`, `GET` and `DELETE /v1/responses/{id}`). One hash per response,
 * named by its owner's key id and its own id (keyspace's storedResponseKey): a key finds only its
 * own responses, and another key's id names a key that does not exist, so ownership needs no
 * check of its own. Each response expires after the retention (30 days, as OpenAI keeps them), one
 * larger than the bound is not stored, and the store keeps within its bounds per key (a count and
 * bytes) and in total (bytes) by deleting the OLDEST responses over them (keyspace's
 * putStoredResponse): a conversation continues from its latest response, so a full store keeps
 * storing new ones rather than refusing them. The store may live in a Redis of its own
 * (RESPONSES_REDIS_URL), which may evict.
 */
import { GatewayError, unary } from '@gateway/grpc';
import { deleteStoredResponse, putStoredResponse, storedResponseKey, type StoredResponseBounds, storedResponsesTotalKeys } from '@gateway/keyspace';
import type { Logger } from '@gateway/logger';
import { metric, type prometheus, serviceMetrics } from '@gateway/observability';
import type {
  DeleteResponseRequestOutput,
  DeleteResponseResponse,
  GetResponseRequestOutput,
  GetResponseResponse,
  PutResponseRequestOutput,
  PutResponseResponse,
  ResponseStoreServiceHandlers,
} from '@gateway/proto';
import type { RedisClient } from '@gateway/redis';

/** How long a stored response is kept unless configured otherwise: 30 days, as OpenAI keeps them. */
export const DEFAULT_RESPONSES_TTL_SECONDS = 30 * 24 * 3600;
/** The largest stored form (the response and its input items, UTF-8 bytes) that is stored: 4 MiB. */
export const DEFAULT_RESPONSE_MAX_BYTES = 4 * 1024 * 1024;
/** The bounds unless configured otherwise: 10,000 responses and 256 MiB per key, 2 GiB in all. */
export const DEFAULT_RESPONSE_BOUNDS: StoredResponseBounds = {
  maxPerKey: 10_000,
  maxBytesPerKey: 256 * 1024 * 1024,
  maxTotalBytes: 2 * 1024 * 1024 * 1024,
};

/** The fully qualified name the ResponseStoreService is registered and health-checked under. */
export const RESPONSE_STORE_SERVICE_NAME = 'gateway.responses.v1.ResponseStoreService';

/** A key id as auth draws them, and a response id as the edge draws them: nothing else names a key. */
const KEY_ID = /^key_[A-Za-z0-9]{1,64}$/;
const RESPONSE_ID = /^resp_[A-Za-z0-9]{1,64}$/;

/** What the ResponseStoreService is made of. */
export interface ResponseStoreDependencies {
  redis: RedisClient;
  logger: Logger;
  registry?: prometheus.Registry;
  /** How long a stored response is kept, in seconds (METERING_RESPONSES_TTL_SECONDS). */
  ttlSeconds?: number;
  /** The largest stored form stored, in bytes (DEFAULT_RESPONSE_MAX_BYTES). */
  maxBytes?: number;
  /** The store's bounds per key and in total (DEFAULT_RESPONSE_BOUNDS); 0 for any: none. */
  bounds?: StoredResponseBounds;
  /** Names another set of the keys that hold the total (tests sharing a Redis); default `responses`. */
  totalTag?: string;
}

function invalid(message: string, param: string): GatewayError {
  return GatewayError.of('invalid_request', message, { param });
}

/**
 * The key of a request's response; undefined for a response id the edge never draws (no response
 * has it: read and delete find nothing). A key id that is not one is refused.
 */
function responseKey(request: { key_id?: string; response_id?: string }): string | undefined {
  const keyId = request.key_id ?? '';
  const responseId = request.response_id ?? '';
  if (!KEY_ID.test(keyId)) throw invalid('key_id must be a key id (key_...).', 'key_id');
  return RESPONSE_ID.test(responseId) ? storedResponseKey(keyId, responseId) : undefined;
}

/** Creates the ResponseStoreService's handlers; a Redis failure is UNAVAILABLE (store_unavailable). */
export function createResponseStoreService(dependencies: ResponseStoreDependencies): ResponseStoreServiceHandlers {
  const { redis, logger } = dependencies;
  const ttlSeconds = dependencies.ttlSeconds ?? DEFAULT_RESPONSES_TTL_SECONDS;
  const maxBytes = dependencies.maxBytes ?? DEFAULT_RESPONSE_MAX_BYTES;
  const bounds = dependencies.bounds ?? DEFAULT_RESPONSE_BOUNDS;
  const totalKeys = storedResponsesTotalKeys(dependencies.totalTag);
  // biome-ignore format: one metric a line, a table of name, help and the label each is counted by
  const { puts, storeErrors, evictions, storedBytes } = serviceMetrics(dependencies.registry, {
    puts: metric.counterBy('gateway_metering_responses_stored_total', 'Responses the edge asked to store, by outcome (stored; too_large: over the bound, not stored).', 'outcome', ['stored', 'too_large']),
    storeErrors: metric.counterBy('gateway_metering_responses_store_errors_total', 'Redis operations on stored responses that failed, by operation (put, get, delete).', 'operation', ['put', 'get', 'delete']),
    evictions: metric.counterBy('gateway_metering_responses_evicted_total', "Stored responses deleted before their time to keep the store within its bounds, by bound (key: the key's count or bytes; total: the bytes in all).", 'bound', ['key', 'total']),
    storedBytes: metric.gauge('gateway_metering_responses_stored_bytes', 'Bytes of stored responses in all (their stored form), as of the latest store or delete; compare with METERING_RESPONSES_MAX_TOTAL_BYTES.'),
  });
  const report = (error: unknown, method: string) => logger.error({ err: error, method }, 'response store handler failed');

  async function store<T>(operation: 'put' | 'get' | 'delete', run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      storeErrors.inc({ operation });
      logger.error({ err: { message: (error as Error).message }, operation }, 'response store unavailable');
      throw GatewayError.of('store_unavailable', 'Stored responses cannot be reached right now.', { retryable: true, cause: error });
    }
  }

  /** The answer's time as the edge gave it; absent, 0, or not a time (an older edge): now. */
  const answeredAt = (ms: number | string | undefined): number | undefined => {
    const value = Number(ms ?? 0);
    return Number.isSafeInteger(value) && value > 0 ? value : undefined;
  };

  async function putResponse(request: PutResponseRequestOutput): Promise<PutResponseResponse> {
    const key = responseKey(request);
    if (key === undefined) throw invalid('response_id must be a response id (resp_...).', 'response_id');
    const response = request.response_json ?? '';
    const input = request.input_items_json ?? '';
    if (Buffer.byteLength(response) + Buffer.byteLength(input) > maxBytes) {
      puts.inc({ outcome: 'too_large' });
      return { outcome: 'PUT_OUTCOME_TOO_LARGE' };
    }
    // One script: the response never exists without its expiry, nor outside its key's index.
    const put = await store('put', () =>
      putStoredResponse(
        redis,
        // Ordered by when its edge answered it, not by when this put arrived (puts may overtake each other).
        { keyId: request.key_id!, responseId: request.response_id!, response, input, ttlMs: ttlSeconds * 1_000, nowMs: answeredAt(request.answered_at_ms) },
        bounds,
        totalKeys,
      ),
    );
    evictions.inc({ bound: 'key' }, put.evictedForKey);
    evictions.inc({ bound: 'total' }, put.evictedForTotal);
    storedBytes.set(put.totalBytes);
    puts.inc({ outcome: 'stored' });
    return { outcome: 'PUT_OUTCOME_STORED', ttl_seconds: ttlSeconds };
  }

  async function getResponse(request: GetResponseRequestOutput): Promise<GetResponseResponse> {
    const key = responseKey(request);
    if (key === undefined) return { found: false };
    const [response, input] = await store('get', () => redis.hmget(key, 'response', 'input'));
    if (response === null || response === undefined) return { found: false };
    return { found: true, response_json: response, input_items_json: input ?? '[]' };
  }

  async function deleteResponse(request: DeleteResponseRequestOutput): Promise<DeleteResponseResponse> {
    const key = responseKey(request);
    if (key === undefined) return { deleted: false };
    const deleted = await store('delete', () => deleteStoredResponse(redis, request.key_id!, request.response_id!, totalKeys, ttlSeconds * 1_000));
    return { deleted };
  }

  return {
    PutResponse: unary(putResponse, 'PutResponse', report),
    GetResponse: unary(getResponse, 'GetResponse', report),
    DeleteResponse: unary(deleteResponse, 'DeleteResponse', report),
  };
}
