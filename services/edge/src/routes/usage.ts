/**
 * Usage read back, from metering's UsageService:
 *   GET /v1/usage          with a gateway key: that key's own usage, optionally by model
 *   GET /admin/v1/usage    with the admin token: every key's, by any of key, model and plan
 *   GET /admin/v1/requests with the admin token: the latest requests
 *   GET /admin/v1/models   with the admin token: each model's health as the router reports it
 * Usage comes in buckets of a UTC hour (kept 14 days) or a UTC day (kept 400 days); times are
 * Unix seconds; only buckets with usage are listed, so a range without any is an empty list.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { picoUsdToUsd } from '@gateway/catalog';
import { callUnary } from '@gateway/grpc';
import type {
  ListKeysRequest,
  ListKeysResponseOutput,
  ListRecentRequestsRequest,
  ListRecentRequestsResponseOutput,
  QueryUsageRequest,
  QueryUsageResponseOutput,
  RecentRequestOutput,
  UsageCountsOutput,
} from '@gateway/proto';
import type { EdgeDependencies } from '../dependencies.js';
import { invalid } from '../errors.js';
import type { UsageResultJson } from '../wire/usage-json.js';
import { adminTokenHook } from './admin-token.js';
import { bearerKey, checkKey, noteKeyChecked } from '../auth/key-check.js';
import { tierName } from './models.js';

/** What usage can be grouped by. */
type Grouping = 'key' | 'model' | 'plan';

/** A parsed usage query. */
interface UsageQuery {
  start: number;
  end: number;
  bucket: 'hour' | 'day';
  groupBy: Grouping[];
  keyId?: string;
}

const BUCKET_ALIASES: Record<string, 'hour' | 'day'> = { hour: 'hour', '1h': 'hour', day: 'day', '1d': 'day' };
const KEY_ID = /^key_[A-Za-z0-9]{16}$/;
const PLAN_NAMES: Record<string, string> = { PLAN_STARTER: 'starter', PLAN_PRO: 'pro', PLAN_ENTERPRISE: 'enterprise' };

/** One query parameter as a single string (a repeated parameter is refused). */
function single(query: Record<string, unknown>, names: readonly string[]): string | undefined {
  for (const name of names) {
    const value = query[name];
    if (value === undefined) continue;
    if (typeof value !== 'string') throw invalid(name, `'${name}' must be given once.`);
    return value;
  }
  return undefined;
}

function unixSeconds(value: string | undefined, param: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[0-9]{1,12}$/.test(value)) throw invalid(param, `'${param}' must be a time in Unix seconds (a non-negative integer).`);
  return Number(value);
}

/** Reads and checks a usage query; `groupings` are what this route may group by. */
function usageQuery(request: FastifyRequest, groupings: readonly Grouping[], admin: boolean): UsageQuery {
  const query = (request.query ?? {}) as Record<string, unknown>;
  const known = ['start', 'start_time', 'end', 'end_time', 'bucket', 'bucket_width', 'group_by', ...(admin ? ['key_id'] : [])];
  for (const name of Object.keys(query)) {
    if (!known.includes(name)) throw invalid(name, `Unknown query parameter '${name}'. Allowed: ${known.join(', ')}.`, 'unknown_parameter');
  }
  const start = unixSeconds(single(query, ['start', 'start_time']), 'start');
  if (start === undefined) throw invalid('start', "'start' is required: the range's start in Unix seconds.", 'missing_required_parameter');
  const end = unixSeconds(single(query, ['end', 'end_time']), 'end') ?? Math.ceil(Date.now() / 1000);
  if (end < start) throw invalid('end', "'end' must not be before 'start'.");
  const bucketText = single(query, ['bucket', 'bucket_width']) ?? 'day';
  const bucket = BUCKET_ALIASES[bucketText];
  if (!bucket) throw invalid('bucket', "'bucket' must be 'hour' or 'day'.");
  const groupText = single(query, ['group_by']);
  const groupBy: Grouping[] = [];
  for (const part of groupText ? groupText.split(',') : []) {
    const name = part.trim() as Grouping;
    if (!groupings.includes(name)) throw invalid('group_by', `'group_by' takes a comma-separated list of ${groupings.join(', ')}.`);
    if (!groupBy.includes(name)) groupBy.push(name);
  }
  const keyId = admin ? single(query, ['key_id']) : undefined;
  if (keyId !== undefined && !KEY_ID.test(keyId)) throw invalid('key_id', "'key_id' must be a key id (key_ and 16 letters or digits).");
  return { start, end, bucket, groupBy, ...(keyId ? { keyId } : {}) };
}

/** Sums of one group. */
interface Sums {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  cost: bigint;
  errors: number;
  fallbacks: number;
}

function addCounts(sums: Sums, counts: UsageCountsOutput | null | undefined): void {
  sums.requests += Number(counts?.requests ?? 0);
  sums.prompt_tokens += Number(counts?.prompt_tokens ?? 0);
  sums.completion_tokens += Number(counts?.completion_tokens ?? 0);
  sums.cached_tokens += Number(counts?.cached_tokens ?? 0);
  sums.cost += BigInt(counts?.cost_pico_usd || '0');
  sums.errors += Number(counts?.errors ?? 0);
  sums.fallbacks += Number(counts?.fallbacks ?? 0);
}

function resultJson(sums: Sums, group: Partial<Record<'key_id' | 'model' | 'plan', string>>): UsageResultJson {
  return {
    object: 'usage.result',
    ...group,
    requests: sums.requests,
    prompt_tokens: sums.prompt_tokens,
    completion_tokens: sums.completion_tokens,
    cached_tokens: sums.cached_tokens,
    cost_usd: picoUsdToUsd(sums.cost),
    cost_pico_usd: sums.cost.toString(),
    errors: sums.errors,
    fallbacks: sums.fallbacks,
  };
}

function emptySums(): Sums {
  return { requests: 0, prompt_tokens: 0, completion_tokens: 0, cached_tokens: 0, cost: 0n, errors: 0, fallbacks: 0 };
}

/**
 * Metering's rows grouped into buckets (ascending) of results, and their totals; with
 * `unavailable_key_ids` when some keys could not be read (a Redis shard failing over): the page
 * and its totals leave them out.
 */
function usagePage(query: UsageQuery, { rows, unavailable_key_ids: unavailable }: QueryUsageResponseOutput, planOf: (keyId: string) => string) {
  const width = query.bucket === 'hour' ? 3_600 : 86_400;
  const buckets = new Map<number, Map<string, { group: Partial<Record<'key_id' | 'model' | 'plan', string>>; sums: Sums }>>();
  const totals = emptySums();
  for (const row of rows) {
    const start = Number(row.start ?? 0);
    const group: Partial<Record<'key_id' | 'model' | 'plan', string>> = {};
    if (query.groupBy.includes('key')) group.key_id = row.key_id ?? '';
    if (query.groupBy.includes('model')) group.model = row.model_id ?? '';
    if (query.groupBy.includes('plan')) group.plan = planOf(row.key_id ?? '');
    const name = JSON.stringify([group.key_id, group.model, group.plan]);
    let results = buckets.get(start);
    if (!results) buckets.set(start, (results = new Map()));
    let entry = results.get(name);
    if (!entry) results.set(name, (entry = { group, sums: emptySums() }));
    addCounts(entry.sums, row.counts);
    addCounts(totals, row.counts);
  }
  return {
    object: 'page' as const,
    bucket: query.bucket,
    start: query.start,
    end: query.end,
    group_by: query.groupBy,
    data: [...buckets]
      .sort(([a], [b]) => a - b)
      .map(([start, results]) => ({
        object: 'bucket' as const,
        start_time: start,
        end_time: start + width,
        results: [...results.values()].map((entry) => resultJson(entry.sums, entry.group)),
      })),
    totals: resultJson(totals, {}),
    has_more: false,
    ...(unavailable?.length ? { unavailable_key_ids: unavailable } : {}),
  };
}

function queryUsage(deps: EdgeDependencies, request: FastifyRequest, query: UsageQuery, keyIds: string[]): Promise<QueryUsageResponseOutput> {
  return callUnary<QueryUsageRequest, QueryUsageResponseOutput>(
    deps.metering,
    deps.metering.QueryUsage,
    {
      start: query.start,
      end: query.end,
      bucket: query.bucket === 'hour' ? 'BUCKET_WIDTH_HOUR' : 'BUCKET_WIDTH_DAY',
      key_ids: keyIds,
    },
    { deadlineMs: Math.max(deps.config.EDGE_CONTROL_DEADLINE_MS, 10_000), requestId: request.id },
  );
}

/** Registers GET /v1/usage: a key's own usage, read with that key. */
export function registerUsage(app: FastifyInstance, deps: EdgeDependencies): void {
  app.get('/v1/usage', async (request) => {
    // The key first: a caller without a valid key learns nothing from the query's errors.
    noteKeyChecked(request);
    const decision = await checkKey(deps, bearerKey(request), request.id);
    const query = usageQuery(request, ['model'], false);
    const keyId = decision.key_id ?? '';
    return usagePage(query, await queryUsage(deps, request, query, [keyId]), () => '');
  });
}

/** A metered request as the admin API shows it. */
function recentJson(entry: RecentRequestOutput) {
  const outcome = (entry.outcome ?? 'OUTCOME_UNSPECIFIED').replace('OUTCOME_', '').toLowerCase();
  return {
    object: 'gateway.request',
    id: entry.event_id ?? '',
    request_id: entry.request_id ?? '',
    key_id: entry.key_id ?? '',
    created_at: Number(entry.received_at_ms ?? 0),
    requested_model: entry.requested_model ?? '',
    model: entry.model_id ?? '',
    provider: entry.provider ?? '',
    stream: entry.stream === true,
    outcome,
    error_code: entry.error_code || null,
    latency_ms: Number(entry.latency_ms ?? 0),
    prompt_tokens: Number(entry.prompt_tokens ?? 0),
    completion_tokens: Number(entry.completion_tokens ?? 0),
    cost_usd: picoUsdToUsd(BigInt(entry.cost_pico_usd || '0')),
    fallbacks: Number(entry.fallback_attempts ?? 0),
    auto: entry.auto ? { score: entry.auto.score ?? 0, tier: entry.auto.tier ?? '', policy: entry.auto.policy ?? '' } : null,
  };
}

/** Registers the admin API's usage, latest requests and model health, when an admin token is configured. */
export function registerAdminUsage(app: FastifyInstance, deps: EdgeDependencies): void {
  const token = deps.config.EDGE_ADMIN_TOKEN;
  if (!token) return;
  const options = (requestId: string) => ({ deadlineMs: deps.config.EDGE_CONTROL_DEADLINE_MS, requestId });

  void app.register(async (admin) => {
    admin.addHook('onRequest', adminTokenHook(token));

    admin.get('/admin/v1/usage', async (request) => {
      const query = usageQuery(request, ['key', 'model', 'plan'], true);
      const [usage, plans] = await Promise.all([
        queryUsage(deps, request, query, query.keyId ? [query.keyId] : []),
        // A key's plan is its plan now: usage is grouped by the plans keys have today.
        query.groupBy.includes('plan')
          ? callUnary<ListKeysRequest, ListKeysResponseOutput>(deps.auth, deps.auth.ListKeys, {}, options(request.id)).then(
              (listed) => new Map(listed.keys.map((key) => [key.key_id ?? '', PLAN_NAMES[key.plan ?? ''] ?? 'unknown'])),
            )
          : Promise.resolve(new Map<string, string>()),
      ]);
      return usagePage(query, usage, (keyId) => plans.get(keyId) ?? 'unknown');
    });

    admin.get('/admin/v1/requests', async (request) => {
      const query = (request.query ?? {}) as Record<string, unknown>;
      for (const name of Object.keys(query)) {
        if (name !== 'limit' && name !== 'key_id') throw invalid(name, `Unknown query parameter '${name}'. Allowed: limit, key_id.`, 'unknown_parameter');
      }
      const limitText = single(query, ['limit']);
      const limit = limitText === undefined ? 50 : Number(limitText);
      if (!/^[0-9]{1,3}$/.test(limitText ?? '50') || limit < 1 || limit > 200) throw invalid('limit', "'limit' must be an integer from 1 to 200.");
      const keyId = single(query, ['key_id']);
      if (keyId !== undefined && !KEY_ID.test(keyId)) throw invalid('key_id', "'key_id' must be a key id (key_ and 16 letters or digits).");
      const listed = await callUnary<ListRecentRequestsRequest, ListRecentRequestsResponseOutput>(
        deps.metering,
        deps.metering.ListRecentRequests,
        { limit, key_id: keyId ?? '' },
        options(request.id),
      );
      return { object: 'list', data: listed.requests.map(recentJson) };
    });

    admin.get('/admin/v1/models', async () => ({
      object: 'list',
      data: deps.catalog.list().map((model) => ({
        id: model.id ?? '',
        provider: model.provider ?? '',
        available: model.available === true,
        retry_after_ms: model.available === false && model.retry_after_ms !== undefined && model.retry_after_ms !== null ? Number(model.retry_after_ms) : null,
        quality_tier: tierName(model.quality_tier),
      })),
    }));
  });
}
