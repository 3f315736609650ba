/**
 * Usage read back from metering's UsageService, as both usage routes answer it: the query string
 * checked into a query (OpenAI's parameter names read as ours), metering asked for the keys it
 * names, and metering's rows grouped into buckets of results with their totals. Usage comes in
 * buckets of a UTC hour (kept 14 days) or a UTC day (kept 400 days); times are Unix seconds; only
 * buckets with usage are listed, so a range without any is an empty list.
 */
import type { FastifyRequest } from 'fastify';
import { picoUsdToUsd } from '@gateway/catalog';
import { callUnary } from '@gateway/grpc';
import type { QueryUsageRequest, QueryUsageResponseOutput, UsageCountsOutput } from '@gateway/proto';
import type { EdgeDependencies } from '../dependencies.js';
import { edgeError } from '../error-codes.js';
import { BUCKET_ALIASES, type BucketWidth, type Grouping, type UsageQueryString, type UsageResult } from './admin/admin-api-schemas.js';

/** A checked usage query. */
export interface UsageQuery {
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
export async function readAliases(request: FastifyRequest): Promise<void> {
  const query = request.query as Record<string, unknown>;
  for (const [alias, name] of QUERY_ALIASES) {
    if (query[name] !== undefined || query[alias] === undefined) continue;
    query[name] = query[alias];
    delete query[alias];
  }
}

/** A validated usage query string as a query; the one check no schema can make, that `end` is not before `start`. */
export function usageQuery(query: UsageQueryString): UsageQuery {
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
  cache_hits: number;
  saved_cost: bigint;
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
  sums.cache_hits += Number(counts?.cache_hits ?? 0);
  sums.saved_cost += BigInt(counts?.saved_cost_pico_usd || '0');
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
    cache_hits: sums.cache_hits,
    saved_cost_usd: picoUsdToUsd(sums.saved_cost),
    saved_cost_pico_usd: sums.saved_cost.toString(),
  };
}

function emptySums(): Sums {
  return {
    requests: 0,
    prompt_tokens: 0,
    completion_tokens: 0,
    cached_tokens: 0,
    cache_write_tokens: 0,
    cost: 0n,
    errors: 0,
    fallbacks: 0,
    cache_hits: 0,
    saved_cost: 0n,
  };
}

/**
 * Metering's rows grouped into buckets (ascending) of results, and their totals; with
 * `unavailable_key_ids` when some keys could not be read (a Redis shard failing over): the page
 * and its totals leave them out.
 */
export function usagePage(query: UsageQuery, { rows, unavailable_key_ids: unavailable }: QueryUsageResponseOutput, planOf: (keyId: string) => string) {
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

export function queryUsage(deps: EdgeDependencies, request: FastifyRequest, query: UsageQuery, keyIds: string[]): Promise<QueryUsageResponseOutput> {
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
