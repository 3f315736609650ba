/**
 * The admin API's guardrail policies: /admin/v1/policies to put, list, read and remove the
 * policies the guard service checks requests against, in the admin scope (admin-scope.ts: the
 * viewer role reads, the admin role changes, each call carrying its actor for the audit trail),
 * each an RPC of the guard service, which keeps them in Redis and pushes a change to every edge
 * (WatchPolicies). An external check's credential is sent to the guard only, stored encrypted
 * there, and never returned.
 */
import type { FastifyInstance } from 'fastify';
import { callUnary } from '@gateway/grpc';
import type {
  CheckSpec,
  CheckSpecOutput,
  DeletePolicyRequest,
  DeletePolicyResponseOutput,
  GetPolicyRequest,
  ListPoliciesRequest,
  ListPoliciesResponseOutput,
  Policy,
  PolicyOutput,
  PutPolicyRequest,
} from '@gateway/proto';
import type { EdgeDependencies } from '../../dependencies.js';
import { type PolicyCheckJson, type PolicyCheckPut, type PolicyJson, type PolicyPut, PolicyPutSchema } from './admin-api-schemas.js';
import { registerAdminResource } from './admin-resource.js';
import { absentBodyIsEmpty, registerAdminScope } from './admin-scope.js';

const POINTS = { input: 'POINT_INPUT', output: 'POINT_OUTPUT', tool_arguments: 'POINT_TOOL_ARGUMENTS', tool_result: 'POINT_TOOL_RESULT' } as const;
const ACTIONS = { block: 'ACTION_BLOCK', mask: 'ACTION_MASK', flag: 'ACTION_FLAG' } as const;

function named<Name extends string>(table: Record<Name, string>, value: string | undefined): Name | '' {
  return (Object.keys(table) as Name[]).find((name) => table[name] === value) ?? '';
}

/** A check of a body as the guard takes it; an external check's credential left out keeps the stored one. */
function checkSpec(check: PolicyCheckPut): CheckSpec {
  const spec: CheckSpec = { name: check.name, points: check.points.map((point) => POINTS[point]), action: ACTIONS[check.action] };
  if (check.secrets) spec.secrets = {};
  if (check.pii) spec.pii = { entities: check.pii.entities ?? [], default_phone_region: check.pii.default_phone_region ?? '' };
  if (check.patterns) spec.patterns = { words: check.patterns.words ?? [], patterns: check.patterns.patterns ?? [], entity: check.patterns.entity ?? '' };
  if (check.limits) spec.limits = { max_chars: check.limits.max_chars ?? 0, allowed_scripts: check.limits.allowed_scripts ?? [] };
  if (check.external) {
    const external = check.external;
    spec.external = {
      service: external.service,
      base_url: external.base_url ?? '',
      credential: external.credential ?? '',
      keep_credential: external.credential === undefined,
      settings: external.settings ?? {},
      deadline_ms: external.deadline_ms ?? 0,
    };
  }
  return spec;
}

/** A check as the admin API's JSON: never its credential. */
function checkJson(check: CheckSpecOutput): PolicyCheckJson {
  const json: PolicyCheckJson = {
    name: check.name ?? '',
    points: check.points.map((point) => named(POINTS, point)).filter(Boolean),
    action: named(ACTIONS, check.action),
  };
  if (check.secrets) json.secrets = {};
  if (check.pii) json.pii = { entities: [...check.pii.entities], default_phone_region: check.pii.default_phone_region ?? '' };
  if (check.patterns) json.patterns = { words: [...check.patterns.words], patterns: [...check.patterns.patterns], entity: check.patterns.entity ?? '' };
  if (check.limits) json.limits = { max_chars: check.limits.max_chars ?? 0, allowed_scripts: [...check.limits.allowed_scripts] };
  if (check.external) {
    const external = check.external;
    json.external = {
      service: external.service ?? '',
      base_url: external.base_url ?? '',
      settings: { ...external.settings },
      deadline_ms: external.deadline_ms ?? 0,
    };
  }
  return json;
}

/** A policy as the admin API's JSON. */
export function adminPolicyJson(policy: PolicyOutput): PolicyJson {
  return {
    object: 'policy',
    name: policy.name ?? '',
    description: policy.description ?? '',
    enabled: policy.enabled === true,
    mode: policy.mode === 'MODE_MONITOR' ? 'monitor' : 'enforce',
    on_error: policy.on_error === 'ON_ERROR_BLOCK' ? 'block' : 'allow',
    attachment: {
      key_ids: [...(policy.attachment?.key_ids ?? [])],
      team_ids: [...(policy.attachment?.team_ids ?? [])],
      models: [...(policy.attachment?.models ?? [])],
      all_requests: policy.attachment?.all_requests === true,
    },
    checks: policy.checks.map(checkJson),
    stream_window: { tokens: policy.stream_window?.tokens ?? 0, ms: policy.stream_window?.ms ?? 0 },
    restore_masked: policy.restore_masked === true,
    updated_at: Math.floor((policy.updated_at_ms ?? 0) / 1000),
  };
}

/** A body as the policy the guard stores under `name`: enabled, enforced and allowing on error unless it says otherwise. */
function policyOf(name: string, body: PolicyPut): Policy {
  return {
    name,
    description: body.description ?? '',
    enabled: body.enabled ?? true,
    mode: body.mode === 'monitor' ? 'MODE_MONITOR' : 'MODE_ENFORCE',
    on_error: body.on_error === 'block' ? 'ON_ERROR_BLOCK' : 'ON_ERROR_ALLOW',
    attachment: {
      key_ids: body.attachment?.key_ids ?? [],
      team_ids: body.attachment?.team_ids ?? [],
      models: body.attachment?.models ?? [],
      all_requests: body.attachment?.all_requests ?? false,
    },
    checks: body.checks.map(checkSpec),
    stream_window: { tokens: body.stream_window?.tokens ?? 0, ms: body.stream_window?.ms ?? 0 },
    restore_masked: body.restore_masked ?? false,
  };
}

/** Registers /admin/v1/policies when an admin credential and a guard service are configured. */
export function registerAdminPolicies(app: FastifyInstance, deps: EdgeDependencies): void {
  const guard = deps.guard;
  if (!guard) return;
  registerAdminScope(app, deps, (admin, options) => {
    admin.put<{ Params: { name: string }; Body: PolicyPut }>(
      '/admin/v1/policies/:name',
      { schema: { body: PolicyPutSchema }, preValidation: absentBodyIsEmpty },
      async (request): Promise<PolicyJson> => {
        const put: PutPolicyRequest = { policy: policyOf(request.params.name, request.body) };
        return adminPolicyJson(await callUnary<PutPolicyRequest, PolicyOutput>(guard, guard.PutPolicy, put, options(request)));
      },
    );

    registerAdminResource(admin, options, {
      path: '/admin/v1/policies',
      param: 'name',
      json: adminPolicyJson,
      list: async (_request, call) => (await callUnary<ListPoliciesRequest, ListPoliciesResponseOutput>(guard, guard.ListPolicies, {}, call)).policies,
      get: (name, call) => callUnary<GetPolicyRequest, PolicyOutput>(guard, guard.GetPolicy, { name }, call),
      remove: async (name, call) => {
        await callUnary<DeletePolicyRequest, DeletePolicyResponseOutput>(guard, guard.DeletePolicy, { name }, call);
        return { object: 'policy.deleted', name, deleted: true };
      },
    });
  });
}
