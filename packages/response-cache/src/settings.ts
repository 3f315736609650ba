/**
 * The operator's cache settings: one record per target (`global`, `model:<id>`, `team:<id>`,
 * `key:<id>`), each setting only what it changes; validated here when put. The edge merges a
 * request's records (global, its model's, its team's, its key's, each overriding the one before
 * field by field) from the snapshot it watches; the cache merges a team's to find the scope a
 * purge of the team reaches.
 */
import { GatewayError } from '@gateway/grpc';
import type { CacheSettingsOutput } from '@gateway/proto';

/** What a target looks like. */
export const TARGET_PATTERN = /^(global|model:[A-Za-z0-9._:/@-]{1,128}|team:team_[A-Za-z0-9]{16}|key:key_[A-Za-z0-9_-]{1,64})$/;
/** A scope setting: `team`, `key`, or `shared:<group>`. */
const SCOPE_PATTERN = /^(team|key|shared:[a-z0-9_-]{1,64})$/;
/** At most this many targets: each is part of every edge's snapshot. */
export const MAX_TARGETS = 10_000;
/** The longest TTL: 30 days. */
export const MAX_TTL_SECONDS = 2_592_000;
/** A semantic model setting: a catalog model id, or empty for exact only. */
const MODEL_ID_PATTERN = /^[A-Za-z0-9._:/@-]{1,128}$/;
/** The least semantic threshold: nearer than this is not the same question by any embedding model. */
export const MIN_SEMANTIC_THRESHOLD = 0.5;

function invalid(message: string, param: string): GatewayError {
  return GatewayError.of('invalid_request', message, { param });
}

/** A finite number within [min, max], or the error naming its field. */
function bounded(value: number | undefined, min: number, max: number, param: string): void {
  if (value === undefined) return;
  if (!Number.isFinite(value) || value < min || value > max) throw invalid(`\`${param}\` must be a number from ${min} to ${max}.`, param);
}

/** Validates a target's settings as put, stamped with who put them and when; throws INVALID_ARGUMENT naming the field. */
export function validateSettings(settings: CacheSettingsOutput | undefined, actor: string, nowMs: number): CacheSettingsOutput & { target: string } {
  const target = settings?.target ?? '';
  if (!TARGET_PATTERN.test(target)) throw invalid('`target` must be `global`, `model:<catalog model id>`, `team:<team id>` or `key:<key id>`.', 'target');
  bounded(settings?.ttl_seconds, 1, MAX_TTL_SECONDS, 'ttl_seconds');
  if (settings?.ttl_seconds !== undefined && !Number.isInteger(settings.ttl_seconds)) throw invalid('`ttl_seconds` must be a whole number.', 'ttl_seconds');
  bounded(settings?.max_temperature, 0, 2, 'max_temperature');
  bounded(settings?.hit_cost_ratio, 0, 1, 'hit_cost_ratio');
  bounded(settings?.semantic_threshold, MIN_SEMANTIC_THRESHOLD, 1, 'semantic_threshold');
  if (settings?.semantic_model && !MODEL_ID_PATTERN.test(settings.semantic_model))
    throw invalid('`semantic_model` must be the id of a catalog embedding model, or empty for exact lookups only.', 'semantic_model');
  if (settings?.scope !== undefined && !SCOPE_PATTERN.test(settings.scope))
    throw invalid('`scope` must be `team`, `key` or `shared:<group>` (a group of 1 to 64 lowercase letters, digits, `-` or `_`).', 'scope');
  const given = settings ?? {};
  return {
    target,
    ...(given.enabled !== undefined && { enabled: given.enabled }),
    ...(given.ttl_seconds !== undefined && { ttl_seconds: given.ttl_seconds }),
    ...(given.max_temperature !== undefined && { max_temperature: given.max_temperature }),
    ...(given.scope !== undefined && { scope: given.scope }),
    ...(given.hit_cost_ratio !== undefined && { hit_cost_ratio: given.hit_cost_ratio }),
    ...(given.count_hit_tokens !== undefined && { count_hit_tokens: given.count_hit_tokens }),
    ...(given.semantic_model !== undefined && given.semantic_model !== null && { semantic_model: given.semantic_model }),
    ...(given.semantic_threshold !== undefined && given.semantic_threshold !== null && { semantic_threshold: given.semantic_threshold }),
    updated_by: actor,
    updated_at_ms: nowMs,
  };
}

/** The settings a request gets, every field resolved. */
export interface ResolvedSettings {
  enabled: boolean;
  ttlSeconds: number;
  maxTemperature: number;
  /** `team`, `key` or `shared:<group>`. */
  scope: string;
  hitCostRatio: number;
  countHitTokens: boolean;
  /** The catalog embedding model of semantic lookups; empty: exact only. */
  semanticModel: string;
  /** The least cosine similarity of a semantic hit. */
  semanticThreshold: number;
}

/** The defaults under every target: off; an hour; deterministic requests only; the team's scope; hits free; exact only. */
export const DEFAULT_SETTINGS: Readonly<ResolvedSettings> = Object.freeze({
  enabled: false,
  ttlSeconds: 3_600,
  maxTemperature: 0,
  scope: 'team',
  hitCostRatio: 0,
  countHitTokens: false,
  semanticModel: '',
  semanticThreshold: 0.95,
});

/** Merges records in order (each overriding the one before field by field) over the defaults. */
export function mergeSettings(records: readonly (CacheSettingsOutput | undefined)[]): ResolvedSettings {
  const merged = { ...DEFAULT_SETTINGS };
  for (const record of records) {
    if (!record) continue;
    if (record.enabled !== undefined && record.enabled !== null) merged.enabled = record.enabled;
    if (record.ttl_seconds !== undefined && record.ttl_seconds !== null) merged.ttlSeconds = record.ttl_seconds;
    if (record.max_temperature !== undefined && record.max_temperature !== null) merged.maxTemperature = record.max_temperature;
    if (record.scope) merged.scope = record.scope;
    if (record.hit_cost_ratio !== undefined && record.hit_cost_ratio !== null) merged.hitCostRatio = record.hit_cost_ratio;
    if (record.count_hit_tokens !== undefined && record.count_hit_tokens !== null) merged.countHitTokens = record.count_hit_tokens;
    if (record.semantic_model !== undefined && record.semantic_model !== null) merged.semanticModel = record.semantic_model;
    if (record.semantic_threshold !== undefined && record.semantic_threshold !== null) merged.semanticThreshold = record.semantic_threshold;
  }
  return merged;
}
