/**
 * The UsageService: metered usage read back for the edge's usage API and web console. Reads only
 * Redis, never the usage stream, so it answers while NATS is away (what is not metered yet is not
 * in the answer). Also RecordUsageEvents: the events an edge hands over at shutdown when it cannot
 * publish them, metered by the function that meters the stream's (see MeteringServer).
 */
import { GatewayError, storeCalls, unary } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import type {
  ListRecentRequestsRequestOutput,
  ListRecentRequestsResponse,
  QueryUsageRequestOutput,
  RecordUsageEventsRequestOutput,
  RecordUsageEventsResponse,
  UsageEventOutput,
  QueryUsageResponse,
  RecentRequest,
  UsageServiceHandlers,
} from '@gateway/proto';
import type { RedisClient } from '@gateway/redis';
import { readBuckets, readRecent } from './usage-buckets.js';
import { meteredKeys, meteredKeyTeams } from './usage-store.js';

/** What the UsageService reads. */
export interface UsageServiceDependencies {
  redis: RedisClient;
  logger: Logger;
  /** The clock, in Unix ms; tests pass their own. */
  now?: () => number;
  /** Told of each read Redis failed (gateway_metering_store_errors_total). */
  onStoreError?: () => void;
  /**
   * Meters handed-over events once each by event id; rejects when Redis cannot (nothing of a failed
   * event is recorded). Without it RecordUsageEvents is refused.
   */
  record?: (events: UsageEventOutput[]) => Promise<RecordUsageEventsResponse>;
}

/** The most key ids one query may name. */
export const MAX_QUERY_KEYS = 1_000;
/** How many key id -> team entries the service remembers. */
const MAX_KNOWN_TEAMS = 100_000;
/** The most usage events one RecordUsageEvents call may carry. */
export const MAX_RECORDED_EVENTS = 1_000;
/** The most latest requests one call returns. */
export const MAX_RECENT_REQUESTS = 200;
const KEY_ID = /^key_[A-Za-z0-9]{16}$/;
const TEAM_ID = /^team_[A-Za-z0-9]{16}$/;

function invalid(message: string, param: string): GatewayError {
  return GatewayError.of('invalid_request', message, { param });
}

/** Creates the UsageService's handlers; a Redis failure is UNAVAILABLE (store_unavailable). */
export function createUsageService(dependencies: UsageServiceDependencies): UsageServiceHandlers {
  const { redis, logger } = dependencies;
  const now = dependencies.now ?? Date.now;
  const report = (error: unknown, method: string) => logger.error({ err: error, method }, 'usage handler failed');

  const store = storeCalls(logger, {
    name: 'usage store',
    reason: 'store_unavailable',
    message: 'Usage cannot be read right now.',
    onFailure: dependencies.onStoreError,
  });

  // Key id -> team id of the keys learnt to be in a team: a key's team never changes (a key not in
  // one yet may be a key without usage so far, so it is looked up again).
  const knownTeams = new Map<string, string>();
  /**
   * The teams of keys, from memory once learnt. While the shard of METERED_KEY_TEAMS does not
   * answer, a query without a team filter reads the keys not learnt yet as keys without a team
   * (a team member's usage is then missing from the answer) rather than failing; one with a team
   * filter fails.
   */
  async function teamsOf(keyIds: readonly string[], required: boolean): Promise<Map<string, string>> {
    const unknown = keyIds.filter((keyId) => !knownTeams.has(keyId));
    try {
      const found = await meteredKeyTeams(redis, unknown);
      if (knownTeams.size + unknown.length > MAX_KNOWN_TEAMS) knownTeams.clear();
      for (const [keyId, teamId] of found) knownTeams.set(keyId, teamId);
    } catch (error) {
      if (required) throw error;
      dependencies.onStoreError?.();
      logger.warn({ keys: unknown.length }, 'the teams of some keys could not be read: read as keys without a team');
    }
    return new Map(keyIds.filter((keyId) => knownTeams.get(keyId)).map((keyId) => [keyId, knownTeams.get(keyId)!]));
  }

  async function queryUsage(request: QueryUsageRequestOutput): Promise<QueryUsageResponse> {
    const start = Number(request.start ?? 0);
    const end = Number(request.end ?? 0);
    if (!Number.isSafeInteger(start) || start < 0) throw invalid('start must be a non-negative number of Unix seconds.', 'start');
    if (!Number.isSafeInteger(end) || end < start) throw invalid('end must be Unix seconds no earlier than start.', 'end');
    const width = request.bucket === 'BUCKET_WIDTH_HOUR' ? 'hour' : request.bucket === 'BUCKET_WIDTH_DAY' ? 'day' : undefined;
    if (!width) throw invalid('bucket must be BUCKET_WIDTH_HOUR or BUCKET_WIDTH_DAY.', 'bucket');
    if (request.key_ids.length > MAX_QUERY_KEYS) throw invalid(`At most ${MAX_QUERY_KEYS} key ids per query.`, 'key_ids');
    const named = request.key_ids.filter((keyId) => KEY_ID.test(keyId));
    const teamIds = request.team_ids ?? [];
    if (teamIds.length > MAX_QUERY_KEYS) throw invalid(`At most ${MAX_QUERY_KEYS} team ids per query.`, 'team_ids');
    const wantedTeams = new Set(teamIds.filter((teamId) => TEAM_ID.test(teamId)));
    // The keys of shards that answer are read; the others are named (a shard failing over).
    const unavailable: string[] = [];
    const buckets = await store(async () => {
      const candidates = request.key_ids.length > 0 ? named : await meteredKeys(redis);
      const teams = await teamsOf(candidates, teamIds.length > 0);
      // A team filter keeps the keys metered in one of its teams (none, for malformed team ids).
      const keys = teamIds.length > 0 ? candidates.filter((keyId) => wantedTeams.has(teams.get(keyId) ?? '')) : candidates;
      const read = await readBuckets(redis, { keyIds: keys, width, startMs: start * 1000, endMs: end * 1000, nowMs: now(), unavailable, teams });
      if (keys.length > 0 && unavailable.length === keys.length) throw new Error('no key could be read');
      if (unavailable.length > 0) {
        dependencies.onStoreError?.();
        logger.warn({ unavailable: unavailable.length, keys: keys.length }, 'usage of some keys could not be read');
      }
      return read;
    });
    return {
      unavailable_key_ids: unavailable.sort(),
      rows: buckets.map((bucket) => ({
        start: Math.floor(bucket.startMs / 1000),
        key_id: bucket.keyId,
        team_id: bucket.teamId,
        model_id: bucket.modelId,
        counts: {
          ...bucket.counts,
          cost_pico_usd: bucket.counts.cost_pico_usd.toString(),
          saved_cost_pico_usd: bucket.counts.saved_cost_pico_usd.toString(),
        },
      })),
    };
  }

  async function listRecentRequests(request: ListRecentRequestsRequestOutput): Promise<ListRecentRequestsResponse> {
    const limit = request.limit ? Number(request.limit) : 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_RECENT_REQUESTS) throw invalid(`limit must be 1 to ${MAX_RECENT_REQUESTS}.`, 'limit');
    const keyId = request.key_id ?? '';
    if (keyId && !KEY_ID.test(keyId)) return { requests: [] };
    const entries = await store(() => readRecent(redis, limit, keyId || undefined));
    return { requests: entries.map((json) => JSON.parse(json) as RecentRequest) };
  }

  async function recordUsageEvents(request: RecordUsageEventsRequestOutput): Promise<RecordUsageEventsResponse> {
    const record = dependencies.record;
    if (!record) throw GatewayError.of('service_unavailable', 'Usage events cannot be recorded here.', { retryable: false });
    const events = request.events ?? [];
    if (events.length > MAX_RECORDED_EVENTS) throw invalid(`At most ${MAX_RECORDED_EVENTS} usage events per call.`, 'events');
    if (events.length === 0) return { metered: 0, duplicates: 0, poison: 0 };
    try {
      return await record(events);
    } catch (error) {
      logger.error({ err: { message: (error as Error).message }, events: events.length }, 'handed-over usage events could not be recorded');
      throw GatewayError.of('store_unavailable', 'Usage events cannot be recorded right now.', { retryable: true, cause: error });
    }
  }

  return {
    QueryUsage: unary(queryUsage, 'QueryUsage', report),
    ListRecentRequests: unary(listRecentRequests, 'ListRecentRequests', report),
    RecordUsageEvents: unary(recordUsageEvents, 'RecordUsageEvents', report),
  };
}
