/**
 * A guardrail policy as the guard keeps it: the contract's Policy with its enums as short names,
 * every default filled in, and an outside check's credential sealed (SecretCipher) instead of
 * given. `policyOfStored` turns it back into the contract's Policy, never with a credential, and
 * `summaryOf` into what WatchPolicies pushes to the edges.
 */
import type { Action, CheckSpec, Mode, OnError, Point, Policy, PolicySummary } from '@gateway/proto';

/** Where a check runs. */
export type PointName = 'input' | 'output' | 'tool_arguments' | 'tool_result';
/** What a check does with what it finds. */
export type ActionName = 'block' | 'mask' | 'flag';
/** What a check looks for. */
export type CheckKind = 'secrets' | 'pii' | 'patterns' | 'limits' | 'external';

/** The contract's names of the points, by short name. */
export const POINTS: Readonly<Record<PointName, Point & string>> = {
  input: 'POINT_INPUT',
  output: 'POINT_OUTPUT',
  tool_arguments: 'POINT_TOOL_ARGUMENTS',
  tool_result: 'POINT_TOOL_RESULT',
};
/** The contract's names of the actions, by short name. */
export const ACTIONS: Readonly<Record<ActionName, Action & string>> = { block: 'ACTION_BLOCK', mask: 'ACTION_MASK', flag: 'ACTION_FLAG' };

/** The short name of a contract enum value, or undefined for an unspecified or unknown one. */
export function shortName<Name extends string>(table: Readonly<Record<Name, string>>, value: string | number | undefined): Name | undefined {
  return (Object.keys(table) as Name[]).find((name) => table[name] === value);
}

/** An outside check as stored: its credential sealed ('' for none). */
export interface StoredExternal {
  service: string;
  base_url: string;
  credential_sealed: string;
  settings: Record<string, string>;
  deadline_ms: number;
}

/** One check as stored; exactly the member of its kind is set. */
export interface StoredCheck {
  name: string;
  points: PointName[];
  action: ActionName;
  kind: CheckKind;
  pii?: { entities: string[]; default_phone_region: string };
  patterns?: { words: string[]; patterns: string[]; entity: string };
  limits?: { max_chars: number; allowed_scripts: string[] };
  external?: StoredExternal;
}

/** A policy as stored in Redis. */
export interface StoredPolicy {
  name: string;
  description: string;
  enabled: boolean;
  mode: 'enforce' | 'monitor';
  on_error: 'allow' | 'block';
  attachment: { key_ids: string[]; team_ids: string[]; models: string[]; all_requests: boolean };
  checks: StoredCheck[];
  /** As given: 0 takes the guard's default. */
  stream_window: { tokens: number; ms: number };
  restore_masked: boolean;
  updated_at_ms: number;
}

/** The guard's defaults that a policy may leave to it. */
export interface PolicyDefaults {
  /** GUARD_WINDOW_TOKENS. */
  windowTokens: number;
  /** GUARD_WINDOW_MS. */
  windowMs: number;
  /** GUARD_CHECK_DEADLINE_MS: the deadline of built-in checks and of an outside check that sets none. */
  checkDeadlineMs: number;
}

const MODES: Readonly<Record<StoredPolicy['mode'], Mode & string>> = { enforce: 'MODE_ENFORCE', monitor: 'MODE_MONITOR' };
const ON_ERRORS: Readonly<Record<StoredPolicy['on_error'], OnError & string>> = { allow: 'ON_ERROR_ALLOW', block: 'ON_ERROR_BLOCK' };

/** The contract's mode and on_error of a stored policy. */
export const modeOf = (policy: StoredPolicy): Mode => MODES[policy.mode];
export const onErrorOf = (policy: StoredPolicy): OnError => ON_ERRORS[policy.on_error];
/** The stored mode and on_error of the contract's values (unspecified: enforce, allow). */
export const storedMode = (mode: string | number | undefined): StoredPolicy['mode'] => shortName(MODES, mode) ?? 'enforce';
export const storedOnError = (onError: string | number | undefined): StoredPolicy['on_error'] => shortName(ON_ERRORS, onError) ?? 'allow';

/** A check as the contract shows it: an outside check's credential never. */
function checkSpecOf(check: StoredCheck): CheckSpec {
  const spec: CheckSpec = { name: check.name, points: check.points.map((point) => POINTS[point]), action: ACTIONS[check.action] };
  if (check.kind === 'secrets') spec.secrets = {};
  if (check.pii) spec.pii = { ...check.pii };
  if (check.patterns) spec.patterns = { ...check.patterns };
  if (check.limits) spec.limits = { ...check.limits };
  if (check.external) {
    const { credential_sealed: _sealed, ...external } = check.external;
    spec.external = { ...external, credential: '', keep_credential: false };
  }
  return spec;
}

/** A stored policy as the contract's Policy, without credentials. */
export function policyOfStored(policy: StoredPolicy): Policy {
  return {
    name: policy.name,
    description: policy.description,
    enabled: policy.enabled,
    mode: modeOf(policy),
    on_error: onErrorOf(policy),
    attachment: { ...policy.attachment },
    checks: policy.checks.map(checkSpecOf),
    stream_window: { ...policy.stream_window },
    restore_masked: policy.restore_masked,
    updated_at_ms: policy.updated_at_ms,
  };
}

/** The longest a check of the policy may take, in ms. */
export function deadlineOf(policy: StoredPolicy, defaults: PolicyDefaults): number {
  return Math.max(defaults.checkDeadlineMs, ...policy.checks.map((check) => check.external?.deadline_ms || defaults.checkDeadlineMs));
}

/** What WatchPolicies pushes of an enabled policy, the guard's defaults filled in. */
export function summaryOf(policy: StoredPolicy, defaults: PolicyDefaults): PolicySummary {
  const points = [...new Set(policy.checks.flatMap((check) => check.points))].sort();
  return {
    name: policy.name,
    attachment: { ...policy.attachment },
    points: points.map((point) => POINTS[point]),
    stream_window: { tokens: policy.stream_window.tokens || defaults.windowTokens, ms: policy.stream_window.ms || defaults.windowMs },
    on_error: onErrorOf(policy),
    mode: modeOf(policy),
    restore_masked: policy.restore_masked,
    deadline_ms: deadlineOf(policy, defaults),
  };
}
