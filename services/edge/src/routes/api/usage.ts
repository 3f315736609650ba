/**
 * Usage read back, from metering's UsageService:
 *   GET /v1/usage          with a gateway key: that key's own usage, optionally by model
 *   GET /admin/v1/usage    with the admin token: every key's (or one key's, or one team's), by any
 *                          of key, model, plan and team
 *   GET /admin/v1/requests with the admin token: the latest requests (admin-request-log.ts)
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
  QueryUsageRequest,
  QueryUsageResponseOutput,
  RecentRequestOutput,
  UsageCountsOutput,
} from '@gateway/proto';
import type { EdgeDependencies } from '../../dependencies.js';
import { bearerKey, checkKey, noteKeyChecked } from '../../auth/key-check.js';
import { edgeError } from '../../error-codes.js';
import { planName } from '../admin/admin-keys.js';
import {
  AdminUsageQuerySchema,
  BUCKET_ALIASES,
  type BucketWidth,
  type GatewayRequest,
  type Grouping,
  KeyUsageQuerySchema,
  type List,
  type ModelHealth,
  type UsagePage,
  type UsageQueryString,
  type UsageResult,
} from '../admin/admin-api-schemas.js';
import { registerAdminScope } from '../admin/admin-scope.js';
import { tierName } from '../../catalog-view.js';
import { compileSchemaValidator, schemaRefusal } from '../admin/schema-validation.js';

/** A checked usage query. */
interface UsageQuery {
  start: number;
  end: number;
  bucket: BucketWidth;
  groupBy: Grouping[];
  keyId?: string;
  teamId?: string;
}

/** What a result is grouped by; team_id null for keys without a team. */
type Group = Partial<Record<'key_id' | 'model' | 'plan', string>> & { team_id?: string | null };

/** OpenAI's names of usage query parameters, read as ours when ours are absent. */
const QUERY_ALIASES = [
  ['start_time', 'start'],
  ['end_time', 'end'],
  ['bucket_width', 'bucket'],
] as const;

/** Reads start_time, end_time and bucket_width as start, end and bucket, before the query is validated. */
async function readAliases(request: FastifyRequest): Promise<void> {
  const query = request.query as Record<string, unknown>;
  for (const [alias, name] of QUERY_ALIASES) {
    if (query[name] !== undefined || query[alias] === undefined) continue;
    query[name] = query[alias];
    delete query[alias];
  }
}

/** A validated usage query string as a query; the one check no schema can make, that `end` is not before `start`. */
function usageQuery(query: UsageQueryString): UsageQuery {
  const start = Number(query.start);
  const end = query.end === undefined ? Math.ceil(Date.now() / 1000) : Number(query.end);
  if (end < start) throw edgeError('invalid_value', "'end' must not be before 'start'.", { param: 'end' });
  const groupBy = [...new Set((query.group_by || undefined)?.split(',').map((part) => part.trim() as Grouping) ?? [])];
  return {
    start,
    end,
    bucket: BUCKET_ALIASES[query.bucket ?? 'day'],
    groupBy,
    ...(query.key_id ? { keyId: query.key_id } : {}),
    ...(query.team_id ? { teamId: query.team_id } : {}),
  };
}

/** Sums of one group. */
interface Sums {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  cost: bigint;
  errors: number;
  fallbacks: number;
}

function addCounts(sums: Sums, counts: UsageCountsOutput | null | undefined): void {
  sums.requests += Number(counts?.requests ?? 0);
  sums.prompt_tokens += Number(counts?.prompt_tokens ?? 0);
  sums.completion_tokens += Number(counts?.completion_tokens ?? 0);
  sums.cached_tokens += Number(counts?.cached_tokens ?? 0);
  sums.cache_write_tokens += Number(counts?.cache_write_tokens ?? 0);
  sums.cost += BigInt(counts?.cost_pico_usd || '0');
  sums.errors += Number(counts?.errors ?? 0);
  sums.fallbacks += Number(counts?.fallbacks ?? 0);
}

function resultJson(sums: Sums, group: Group): UsageResult {
  return {
    object: 'usage.result',
    ...group,
    requests: sums.requests,
    prompt_tokens: sums.prompt_tokens,
    completion_tokens: sums.completion_tokens,
    cached_tokens: sums.cached_tokens,
    cache_write_tokens: sums.cache_write_tokens,
    cost_usd: picoUsdToUsd(sums.cost),
    cost_pico_usd: sums.cost.toString(),
    errors: sums.errors,
    fallbacks: sums.fallbacks,
  };
}

function emptySums(): Sums {
  return { requests: 0, prompt_tokens: 0, completion_tokens: 0, cached_tokens: 0, cache_write_tokens: 0, cost: 0n, errors: 0, fallbacks: 0 };
}

/**
 * Metering's rows grouped into buckets (ascending) of results, and their totals; with
 * `unavailable_key_ids` when some keys could not be read (a Redis shard failing over): the page
 * and its totals leave them out.
 */
function usagePage(query: UsageQuery, { rows, unavailable_key_ids: unavailable }: QueryUsageResponseOutput, planOf: (keyId: string) => string) {
  const width = query.bucket === 'hour' ? 3_600 : 86_400;
  const buckets = new Map<number, Map<string, { group: Group; sums: Sums }>>();
  const totals = emptySums();
  for (const row of rows) {
    const start = Number(row.start ?? 0);
    const group: Group = {};
    if (query.groupBy.includes('key')) group.key_id = row.key_id ?? '';
    if (query.groupBy.includes('model')) group.model = row.model_id ?? '';
    if (query.groupBy.includes('plan')) group.plan = planOf(row.key_id ?? '');
    if (query.groupBy.includes('team')) group.team_id = row.team_id || null;
    const name = JSON.stringify([group.key_id, group.model, group.plan, group.team_id]);
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
      ...(query.teamId ? { team_ids: [query.teamId] } : {}),
    },
    { deadlineMs: Math.max(deps.config.EDGE_CONTROL_DEADLINE_MS, 10_000), requestId: request.id },
  );
}

/** Registers GET /v1/usage: a key's own usage, read with that key. */
export function registerUsage(app: FastifyInstance, deps: EdgeDependencies): void {
  app.get<{ Querystring: UsageQueryString }>(
    '/v1/usage',
    {
      schema: { querystring: KeyUsageQuerySchema },
      validatorCompiler: compileSchemaValidator,
      schemaErrorFormatter: schemaRefusal,
      preValidation: readAliases,
    },
    async (request): Promise<UsagePage> => {
      // The key first: a caller without a valid key learns nothing from the query's errors (a
      // query refused by its schema waits for the key's check too: app.ts's error handler).
      noteKeyChecked(request);
      const decision = await checkKey(deps, bearerKey(request), request.id);
      const query = usageQuery(request.query);
      const keyId = decision.key_id ?? '';
      return usagePage(query, await queryUsage(deps, request, query, [keyId]), () => '');
    },
  );
}

/** A metered request as the admin API shows it. */
export function recentJson(entry: RecentRequestOutput): GatewayRequest {
  const outcome = (entry.outcome ?? 'OUTCOME_UNSPECIFIED').replace('OUTCOME_', '').toLowerCase() as GatewayRequest['outcome'];
  return {
    object: 'gateway.request',
    id: entry.event_id ?? '',
    operation: entry.operation || 'chat',
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
  registerAdminScope(app, deps, (admin, options) => {
    admin.get<{ Querystring: UsageQueryString }>(
      '/admin/v1/usage',
      { schema: { querystring: AdminUsageQuerySchema }, preValidation: readAliases },
      async (request): Promise<UsagePage> => {
        const query = usageQuery(request.query);
        const [usage, plans] = await Promise.all([
          queryUsage(deps, request, query, query.keyId ? [query.keyId] : []),
          // A key's plan is its plan now: usage is grouped by the plans keys have today.
          query.groupBy.includes('plan')
            ? callUnary<ListKeysRequest, ListKeysResponseOutput>(deps.auth, deps.auth.ListKeys, {}, options(request)).then(
                (listed) => new Map(listed.keys.map((key) => [key.key_id ?? '', planName(key.plan)])),
              )
            : Promise.resolve(new Map<string, string>()),
        ]);
        return usagePage(query, usage, (keyId) => plans.get(keyId) ?? 'unknown');
      },
    );

    admin.get(
      '/admin/v1/models',
      async (): Promise<List<ModelHealth>> => ({
        object: 'list',
        data: deps.catalog.list().map((model) => ({
          id: model.id ?? '',
          provider: model.provider ?? '',
          available: model.available === true,
          retry_after_ms:
            model.available === false && model.retry_after_ms !== undefined && model.retry_after_ms !== null ? Number(model.retry_after_ms) : null,
          quality_tier: tierName(model.quality_tier),
        })),
      }),
    );
  });
}
