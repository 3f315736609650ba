/** The response cache (/admin/v1/cache): a target's settings, their answer, and a purge. */
import { type Static, Type } from '@sinclair/typebox';
import { fieldNames, steps } from './common.js';

const SETTINGS_FIELDS = [
  'enabled',
  'ttl_seconds',
  'max_temperature',
  'scope',
  'hit_cost_ratio',
  'count_hit_tokens',
  'semantic_model',
  'semantic_threshold',
] as const;

/**
 * The body of PUT /admin/v1/cache/settings/:target: only what the target changes; a field left
 * out comes from the targets under it (global, the model's, the team's, the key's, in that order).
 */
export const CacheSettingsPutSchema = steps(
  fieldNames(SETTINGS_FIELDS),
  Type.Object({
    enabled: Type.Optional(Type.Boolean({ errorMessage: "'enabled' must be true or false." })),
    ttl_seconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 2_592_000, errorMessage: "'ttl_seconds' must be a whole number of seconds from 1 to 2592000 (30 days)." }),
    ),
    max_temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2, errorMessage: "'max_temperature' must be a number from 0 to 2." })),
    scope: Type.Optional(
      Type.String({
        pattern: '^(team|key|shared:[a-z0-9_-]{1,64})$',
        errorMessage: "'scope' must be team, key or shared:<group> (1 to 64 lowercase letters, digits, '-' or '_').",
      }),
    ),
    hit_cost_ratio: Type.Optional(Type.Number({ minimum: 0, maximum: 1, errorMessage: "'hit_cost_ratio' must be a number from 0 to 1." })),
    count_hit_tokens: Type.Optional(Type.Boolean({ errorMessage: "'count_hit_tokens' must be true or false." })),
    semantic_model: Type.Optional(
      Type.String({
        pattern: '^([A-Za-z0-9._:/@-]{1,128})?$',
        errorMessage: "'semantic_model' must be the id of a catalog embedding model, or '' for exact lookups only.",
      }),
    ),
    semantic_threshold: Type.Optional(
      Type.Number({ minimum: 0.5, maximum: 1, errorMessage: "'semantic_threshold' must be a cosine similarity from 0.5 to 1." }),
    ),
  }),
);
/** The body of PUT /admin/v1/cache/settings/:target. */
export type CacheSettingsPut = Static<typeof CacheSettingsPutSchema>;

/** A target's settings as the admin API shows them: what it sets, and who set it when. */
export const CacheSettingsSchema = Type.Object({
  object: Type.Literal('cache.settings'),
  target: Type.String(),
  enabled: Type.Optional(Type.Boolean()),
  ttl_seconds: Type.Optional(Type.Integer()),
  max_temperature: Type.Optional(Type.Number()),
  scope: Type.Optional(Type.String()),
  hit_cost_ratio: Type.Optional(Type.Number()),
  count_hit_tokens: Type.Optional(Type.Boolean()),
  semantic_model: Type.Optional(Type.String()),
  semantic_threshold: Type.Optional(Type.Number()),
  updated_by: Type.String(),
  updated_at: Type.Integer(),
});
/** A target's settings as the admin API shows them. */
export type CacheSettingsJson = Static<typeof CacheSettingsSchema>;

/** The body of POST /admin/v1/cache/purge: exactly one of a team, a key, a model, or all. */
export const CachePurgeSchema = steps(
  fieldNames(['team_id', 'key_id', 'model', 'all'], "Name what to purge: one of 'team_id', 'key_id', 'model' or 'all'."),
  Type.Object(
    {
      team_id: Type.Optional(Type.String({ pattern: '^team_[A-Za-z0-9]{16}$', errorMessage: "'team_id' must be a team id (team_...)." })),
      key_id: Type.Optional(Type.String({ pattern: '^key_[A-Za-z0-9_-]{1,64}$', errorMessage: "'key_id' must be a key id (key_...)." })),
      model: Type.Optional(Type.String({ minLength: 1, maxLength: 128, errorMessage: "'model' must be a catalog model id." })),
      all: Type.Optional(Type.Literal(true, { errorMessage: "'all' must be true." })),
    },
    { maxProperties: 1, errorMessage: { maxProperties: "Name one of 'team_id', 'key_id', 'model' or 'all', not several." } },
  ),
);
/** The body of POST /admin/v1/cache/purge. */
export type CachePurge = Static<typeof CachePurgeSchema>;
