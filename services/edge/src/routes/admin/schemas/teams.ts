/** The admin API's teams (/admin/v1/teams): the bodies of a creation and a change, a team's answer. */
import { type Static, Type } from '@sinclair/typebox';
import {
  AllowedMcpToolsSchema,
  AllowedModelsSchema,
  adminObject,
  BUDGET_FIELDS,
  fieldNames,
  fieldsObject,
  LIMIT_FIELDS,
  Nullable,
  PerMinute,
  steps,
  Unlimited,
  Usd,
} from './common.js';

/** The fields a team's body may carry. */
const TEAM_BODY_FIELDS = ['name', 'limits', 'budgets', 'allowed_models', 'allowed_mcp_tools', 'log_bodies'] as const;

/** A team's limits and budgets in a body: a number, or "unlimited" (or null, in a change) for none. */
function teamLimits(nullable: boolean) {
  const none = nullable ? ', or "unlimited" or null for none' : ' or "unlimited"';
  return {
    limits: Type.Optional(
      fieldsObject(LIMIT_FIELDS, (field) =>
        Type.Union([PerMinute, Unlimited, ...(nullable ? [Type.Null()] : [])], { errorMessage: `'limits.${field}' must be a positive integer${none}.` }),
      ),
    ),
    budgets: Type.Optional(
      fieldsObject(BUDGET_FIELDS, (field) =>
        Type.Union([Usd, Unlimited, ...(nullable ? [Type.Null()] : [])], {
          errorMessage: `'budgets.${field}' must be a positive amount of USD (at least 0.000001)${none}.`,
        }),
      ),
    ),
  };
}

const TeamNameSchema = Type.String({ minLength: 1, maxLength: 200, errorMessage: "'name' must be a string of 1 to 200 characters." });

/** The body of POST /admin/v1/teams: a name, and the team's limits, budgets and allow-list (each absent: none). */
export const TeamCreationSchema = steps(
  fieldNames(TEAM_BODY_FIELDS),
  Type.Object({ name: Type.Unknown() }, { errorMessage: { required: { name: "'name' must be a string of 1 to 200 characters." } } }),
  Type.Object({
    name: TeamNameSchema,
    ...teamLimits(false),
    allowed_models: Type.Optional(AllowedModelsSchema),
    allowed_mcp_tools: Type.Optional(AllowedMcpToolsSchema),
    log_bodies: Type.Optional(Type.Boolean({ errorMessage: "'log_bodies' must be true or false." })),
  }),
);
export type TeamCreation = Static<typeof TeamCreationSchema>;

/** The body of PATCH /admin/v1/teams/:id: absent fields stay; "unlimited" or null removes a limit or budget, null the allow-list. */
export const TeamChangeSchema = steps(
  fieldNames(TEAM_BODY_FIELDS, 'Nothing to change: send name, limits, budgets, allowed_models, allowed_mcp_tools or log_bodies.'),
  Type.Object({
    name: Type.Optional(TeamNameSchema),
    ...teamLimits(true),
    allowed_models: Type.Optional(AllowedModelsSchema),
    allowed_mcp_tools: Type.Optional(AllowedMcpToolsSchema),
    log_bodies: Type.Optional(Type.Boolean({ errorMessage: "'log_bodies' must be true or false." })),
  }),
);
export type TeamChange = Static<typeof TeamChangeSchema>;

/** A team as the admin API returns it. */
export const TeamSchema = adminObject('team', {
  name: Type.String(),
  /** Unix seconds. */
  created_at: Type.Integer(),
  /** Per minute over all the team's keys; null: none. */
  limits: Type.Object({ requests_per_minute: Nullable(Type.Integer()), tokens_per_minute: Nullable(Type.Integer()) }),
  /** USD per UTC day and month over all the team's keys; null: none. */
  budgets: Type.Object({ daily_usd: Nullable(Type.Number()), monthly_usd: Nullable(Type.Number()) }),
  /** The models the team's keys may use; null: every model. */
  allowed_models: Nullable(Type.Array(Type.String())),
  /** The MCP tools the team's keys may list and call; null: every tool. */
  allowed_mcp_tools: Nullable(Type.Array(Type.String())),
  /** The team's live (not revoked) keys. */
  key_count: Type.Integer(),
  /** Whether the request log keeps the bodies of every request of the team's keys. */
  log_bodies: Type.Boolean(),
});
export type Team = Static<typeof TeamSchema>;
