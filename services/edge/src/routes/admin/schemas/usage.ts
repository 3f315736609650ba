/** Usage (GET /v1/usage, GET /admin/v1/usage): the queries and the page of buckets they answer. */
import { type Static, Type } from '@sinclair/typebox';
import { KeyIdParameter, Nullable, queryNames, queryParameter, steps, TeamIdParameter, UnixSeconds } from './common.js';

/** A bucket's width. */
export type BucketWidth = 'hour' | 'day';
/** What usage can be grouped by. */
export type Grouping = 'key' | 'model' | 'plan' | 'team';

/** A usage query's bucket width as the caller may spell it. */
export const BUCKET_ALIASES = { hour: 'hour', '1h': 'hour', day: 'day', '1d': 'day' } as const satisfies Record<string, BucketWidth>;

/**
 * The query of GET /v1/usage (`groupings` ['model']) and GET /admin/v1/usage (every grouping, and
 * key_id), once start_time, end_time and bucket_width (OpenAI's names) are read as start, end and
 * bucket. That `end` is not before `start` is the route's to check.
 */
function usageQuerySchema(groupings: readonly Grouping[], admin: boolean) {
  const names = ['start', 'start_time', 'end', 'end_time', 'bucket', 'bucket_width', 'group_by', ...(admin ? ['key_id', 'team_id'] : [])];
  const grouping = `\\s*(?:${groupings.join('|')})\\s*`;
  return steps(
    queryNames(names),
    Type.Object({ start: Type.Unknown() }, { errorMessage: { required: { start: "'start' is required: the range's start in Unix seconds." } } }),
    Type.Object({
      start: UnixSeconds('start'),
      end: Type.Optional(UnixSeconds('end')),
      bucket: Type.Optional(
        Type.Unsafe<keyof typeof BUCKET_ALIASES>({
          type: 'string',
          enum: Object.keys(BUCKET_ALIASES),
          errorMessage: { type: "'bucket' must be given once.", enum: "'bucket' must be 'hour' or 'day'." },
        }),
      ),
      group_by: Type.Optional(
        queryParameter('group_by', `^(?:${grouping}(?:,${grouping})*)?$`, `'group_by' takes a comma-separated list of ${groupings.join(', ')}.`),
      ),
      ...(admin ? { key_id: Type.Optional(KeyIdParameter), team_id: Type.Optional(TeamIdParameter) } : {}),
    }),
  );
}

/** The query of GET /v1/usage: a key's own usage, by model at most. */
export const KeyUsageQuerySchema = usageQuerySchema(['model'], false);
/** The query of GET /admin/v1/usage. */
export const AdminUsageQuerySchema = usageQuerySchema(['key', 'model', 'plan', 'team'], true);
/** A usage query as the route reads it. */
export type UsageQueryString = Static<typeof KeyUsageQuerySchema> & { key_id?: string; team_id?: string };

/** Usage totals of one group where the query groups by key, model or plan (or of everything). */
export const UsageResultSchema = Type.Object({
  object: Type.Literal('usage.result'),
  key_id: Type.Optional(Type.String()),
  model: Type.Optional(Type.String()),
  plan: Type.Optional(Type.String()),
  /** Grouped by team: the team's id; null for keys without a team. */
  team_id: Type.Optional(Nullable(Type.String())),
  requests: Type.Integer(),
  prompt_tokens: Type.Integer(),
  completion_tokens: Type.Integer(),
  cached_tokens: Type.Integer(),
  /** Prompt tokens written to the provider's cache: a part of prompt_tokens, apart from cached_tokens (cache reads). */
  cache_write_tokens: Type.Integer(),
  cost_usd: Type.Number(),
  /** The exact cost: pico-USD (10^-12 USD) as a decimal integer. */
  cost_pico_usd: Type.String(),
  errors: Type.Integer(),
  fallbacks: Type.Integer(),
  /** Requests answered from the response cache: counted in requests and cost (at their hit cost), in no token count. */
  cache_hits: Type.Integer(),
  /** What the cached answers of those hits cost when they were made: the cost the cache saved. */
  saved_cost_usd: Type.Number(),
  /** saved_cost_usd exactly: pico-USD as a decimal integer. */
  saved_cost_pico_usd: Type.String(),
});
export type UsageResult = Static<typeof UsageResultSchema>;

/** One non-empty time bucket of a usage page. */
export const UsageBucketSchema = Type.Object({
  object: Type.Literal('bucket'),
  /** Unix seconds. */
  start_time: Type.Integer(),
  end_time: Type.Integer(),
  results: Type.Array(UsageResultSchema),
});
export type UsageBucket = Static<typeof UsageBucketSchema>;

/** GET /v1/usage and /admin/v1/usage: only non-empty buckets, ascending. */
export const UsagePageSchema = Type.Object({
  object: Type.Literal('page'),
  bucket: Type.Union([Type.Literal('hour'), Type.Literal('day')]),
  start: Type.Integer(),
  end: Type.Integer(),
  group_by: Type.Array(Type.Union([Type.Literal('key'), Type.Literal('model'), Type.Literal('plan'), Type.Literal('team')])),
  data: Type.Array(UsageBucketSchema),
  totals: UsageResultSchema,
  has_more: Type.Boolean(),
  /** Keys left out because their usage could not be read now (a Redis shard failing over). */
  unavailable_key_ids: Type.Optional(Type.Array(Type.String())),
});
export type UsagePage = Static<typeof UsagePageSchema>;
