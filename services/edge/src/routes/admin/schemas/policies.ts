/** The guardrail policies (/admin/v1/policies): a policy's body and its answer. */
import { type Static, Type } from '@sinclair/typebox';
import { fieldNames, steps } from './common.js';

/** The points a check runs at, as the admin API names them. */
const PointSchema = Type.Union([Type.Literal('input'), Type.Literal('output'), Type.Literal('tool_arguments'), Type.Literal('tool_result')], {
  errorMessage: "'points' must hold input, output, tool_arguments or tool_result.",
});
const ActionSchema = Type.Union([Type.Literal('block'), Type.Literal('mask'), Type.Literal('flag')], {
  errorMessage: "'action' must be block, mask or flag.",
});
const Strings = (maxItems: number, maxLength: number) => Type.Array(Type.String({ minLength: 1, maxLength }), { maxItems });

/** One check of a policy: its name, points, action and exactly one kind. */
const CheckSchema = Type.Object(
  {
    name: Type.String({ pattern: '^[a-z0-9_-]{1,64}$', errorMessage: "A check's 'name' must be 1 to 64 lowercase letters, digits, '-' or '_'." }),
    points: Type.Array(PointSchema, { minItems: 1, maxItems: 4, errorMessage: "A check's 'points' must name at least one point." }),
    action: ActionSchema,
    secrets: Type.Optional(Type.Object({}, { additionalProperties: false })),
    pii: Type.Optional(
      Type.Object(
        { entities: Type.Optional(Strings(20, 40)), default_phone_region: Type.Optional(Type.String({ maxLength: 2 })) },
        { additionalProperties: false },
      ),
    ),
    patterns: Type.Optional(
      Type.Object(
        { words: Type.Optional(Strings(1000, 200)), patterns: Type.Optional(Strings(100, 1000)), entity: Type.Optional(Type.String({ maxLength: 40 })) },
        { additionalProperties: false },
      ),
    ),
    limits: Type.Optional(
      Type.Object({ max_chars: Type.Optional(Type.Integer({ minimum: 0 })), allowed_scripts: Type.Optional(Strings(20, 40)) }, { additionalProperties: false }),
    ),
    external: Type.Optional(
      Type.Object(
        {
          service: Type.String({ minLength: 1, maxLength: 40 }),
          base_url: Type.Optional(Type.String({ maxLength: 2048 })),
          /** Write-only: stored encrypted, never returned; left out keeps the stored one. */
          credential: Type.Optional(Type.String({ maxLength: 8192 })),
          settings: Type.Optional(Type.Record(Type.String(), Type.String({ maxLength: 2000 }), { maxProperties: 20 })),
          deadline_ms: Type.Optional(Type.Integer({ minimum: 1, maximum: 60_000 })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  {
    additionalProperties: false,
    minProperties: 4,
    maxProperties: 4,
    errorMessage: {
      additionalProperties: 'A check holds name, points, action and one of secrets, pii, patterns, limits, external.',
      minProperties: 'A check needs name, points, action and exactly one of secrets, pii, patterns, limits, external.',
      maxProperties: 'A check needs name, points, action and exactly one of secrets, pii, patterns, limits, external.',
      required: 'A check needs name, points and action.',
    },
  },
);

const POLICY_FIELDS = ['description', 'enabled', 'mode', 'on_error', 'attachment', 'checks', 'stream_window', 'restore_masked'] as const;

/**
 * The body of PUT /admin/v1/policies/:name: what a policy applies to, its checks in order, and how
 * it enforces them. An external check's `credential` is stored encrypted and never returned;
 * left out, the stored one is kept.
 */
export const PolicyPutSchema = steps(
  fieldNames(POLICY_FIELDS),
  Type.Object({ checks: Type.Unknown() }, { errorMessage: { required: { checks: "'checks' is required: at least one check." } } }),
  Type.Object({
    description: Type.Optional(Type.String({ maxLength: 500, errorMessage: "'description' must be a string of at most 500 characters." })),
    enabled: Type.Optional(Type.Boolean({ errorMessage: "'enabled' must be true or false." })),
    mode: Type.Optional(Type.Union([Type.Literal('enforce'), Type.Literal('monitor')], { errorMessage: "'mode' must be enforce or monitor." })),
    on_error: Type.Optional(Type.Union([Type.Literal('allow'), Type.Literal('block')], { errorMessage: "'on_error' must be allow or block." })),
    attachment: Type.Optional(
      Type.Object(
        {
          key_ids: Type.Optional(Strings(1000, 100)),
          team_ids: Type.Optional(Strings(1000, 100)),
          models: Type.Optional(Strings(1000, 200)),
          all_requests: Type.Optional(Type.Boolean()),
        },
        { additionalProperties: false, errorMessage: "'attachment' must be an object of key_ids, team_ids, models (arrays of strings) and all_requests." },
      ),
    ),
    checks: Type.Array(CheckSchema, {
      minItems: 1,
      maxItems: 50,
      errorMessage: { minItems: "'checks' must hold at least one check.", maxItems: "'checks' holds at most 50 checks." },
    }),
    stream_window: Type.Optional(
      Type.Object(
        { tokens: Type.Optional(Type.Integer({ minimum: 0, maximum: 100_000 })), ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 600_000 })) },
        { additionalProperties: false, errorMessage: "'stream_window' must be an object of tokens and ms (whole numbers, 0: the guard's default)." },
      ),
    ),
    restore_masked: Type.Optional(Type.Boolean({ errorMessage: "'restore_masked' must be true or false." })),
  }),
);
/** The body of PUT /admin/v1/policies/:name. */
export type PolicyPut = Static<typeof PolicyPutSchema>;
/** One check of a policy's body. */
export type PolicyCheckPut = PolicyPut['checks'][number];

/**
 * A check as the admin API shows it, in the shape it was put: its kind as the one member set
 * (`pii: {...}`); an external check's credential never.
 */
export const PolicyCheckSchema = Type.Object({
  name: Type.String(),
  points: Type.Array(Type.String()),
  action: Type.String(),
  secrets: Type.Optional(Type.Object({})),
  pii: Type.Optional(Type.Object({ entities: Type.Array(Type.String()), default_phone_region: Type.String() })),
  patterns: Type.Optional(Type.Object({ words: Type.Array(Type.String()), patterns: Type.Array(Type.String()), entity: Type.String() })),
  limits: Type.Optional(Type.Object({ max_chars: Type.Integer(), allowed_scripts: Type.Array(Type.String()) })),
  external: Type.Optional(
    Type.Object({
      service: Type.String(),
      base_url: Type.String(),
      settings: Type.Record(Type.String(), Type.String()),
      deadline_ms: Type.Integer(),
    }),
  ),
});

/** A guardrail policy as the admin API shows it. */
export const PolicySchema = Type.Object({
  object: Type.Literal('policy'),
  name: Type.String(),
  description: Type.String(),
  enabled: Type.Boolean(),
  mode: Type.Union([Type.Literal('enforce'), Type.Literal('monitor')]),
  on_error: Type.Union([Type.Literal('allow'), Type.Literal('block')]),
  attachment: Type.Object({
    key_ids: Type.Array(Type.String()),
    team_ids: Type.Array(Type.String()),
    models: Type.Array(Type.String()),
    all_requests: Type.Boolean(),
  }),
  checks: Type.Array(PolicyCheckSchema),
  stream_window: Type.Object({ tokens: Type.Integer(), ms: Type.Integer() }),
  restore_masked: Type.Boolean(),
  /** Unix seconds of its latest change. */
  updated_at: Type.Integer(),
});
/** A guardrail policy as the admin API shows it. */
export type PolicyJson = Static<typeof PolicySchema>;
/** A check as the admin API shows it. */
export type PolicyCheckJson = Static<typeof PolicyCheckSchema>;
