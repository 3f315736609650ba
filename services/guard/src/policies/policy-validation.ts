/**
 * PutPolicy's checks: a policy as the contract gives it becomes a StoredPolicy, or the call fails
 * with INVALID_ARGUMENT (`invalid_request`) naming the field (`checks[1].patterns`), before
 * anything is stored. Every check is compiled here the way it will run (RE2 patterns, scripts,
 * PII kinds, outside services' settings), so a policy that is stored can always be applied. An
 * outside check's credential is sealed with the guard's key; left empty with keep_credential, the
 * stored one is kept.
 */
import { GatewayError } from '@gateway/grpc';
import type { CheckSpecOutput, PolicyOutput } from '@gateway/proto';
import type { SecretCipher } from '@gateway/redis';
import { validateExternalSpec } from '../checks/external/index.js';
import { validateLimitsSpec } from '../checks/limits.js';
import { validatePatternsSpec } from '../checks/patterns.js';
import { validatePiiSpec } from '../checks/pii.js';
import { ACTIONS, type CheckKind, POINTS, type PointName, shortName, type StoredCheck, type StoredPolicy, storedMode, storedOnError } from './policy.js';

/** What a policy's name looks like (also its Redis field and its metric label). */
export const POLICY_NAME_PATTERN = /^[a-z0-9][a-z0-9-]{0,63}$/;
const CHECK_NAME_PATTERN = /^[a-z0-9_-]{1,64}$/;
const MAX_DESCRIPTION = 500;
const MAX_CHECKS = 32;
const MAX_ATTACHED = 1_000;
const MAX_WINDOW_TOKENS = 4_096;
const MAX_WINDOW_MS = 10_000;
const MAX_DEADLINE_MS = 30_000;

const invalid = (param: string, message: string) => GatewayError.of('invalid_request', message, { param });

/** A check's kind: exactly one member set. */
function kindOf(check: CheckSpecOutput, param: string): CheckKind {
  const kinds = (['secrets', 'pii', 'patterns', 'limits', 'external'] as const).filter((kind) => check[kind] !== undefined && check[kind] !== null);
  if (kinds.length !== 1) throw invalid(param, 'A check has exactly one kind: secrets, pii, patterns, limits or external.');
  return kinds[0]!;
}

function validatedCheck(check: CheckSpecOutput, index: number, before: StoredPolicy | undefined, cipher: SecretCipher): StoredCheck {
  const param = `checks[${index}]`;
  const name = check.name ?? '';
  if (!CHECK_NAME_PATTERN.test(name)) throw invalid(`${param}.name`, 'A check name is 1 to 64 lowercase letters, digits, "-" or "_".');
  const points = check.points.map((point) => shortName(POINTS, point));
  if (points.length === 0 || points.some((point) => point === undefined))
    throw invalid(`${param}.points`, 'A check runs at one or more points: input, output, tool_arguments, tool_result.');
  const action = shortName(ACTIONS, check.action);
  if (!action) throw invalid(`${param}.action`, 'A check acts by block, mask or flag.');
  const kind = kindOf(check, param);
  const stored: StoredCheck = { name, points: [...new Set(points as PointName[])].sort(), action, kind };
  const fail = (message: string | undefined) => {
    if (message) throw invalid(`${param}.${kind}`, message);
  };
  if (kind === 'pii') {
    stored.pii = { entities: [...(check.pii?.entities ?? [])], default_phone_region: check.pii?.default_phone_region ?? '' };
    fail(validatePiiSpec({ entities: stored.pii.entities, defaultPhoneRegion: stored.pii.default_phone_region }));
  } else if (kind === 'patterns') {
    stored.patterns = { words: [...(check.patterns?.words ?? [])], patterns: [...(check.patterns?.patterns ?? [])], entity: check.patterns?.entity ?? '' };
    fail(validatePatternsSpec(stored.patterns));
  } else if (kind === 'limits') {
    stored.limits = { max_chars: check.limits?.max_chars ?? 0, allowed_scripts: [...(check.limits?.allowed_scripts ?? [])] };
    fail(validateLimitsSpec(stored.limits));
    if (action === 'mask' && stored.limits.max_chars > 0)
      throw invalid(`${param}.action`, 'A size limit has no span to mask: block or flag it (allowed_scripts alone may mask).');
  } else if (kind === 'external') {
    const external = check.external!;
    const deadline = external.deadline_ms ?? 0;
    if (!Number.isInteger(deadline) || deadline < 0 || deadline > MAX_DEADLINE_MS)
      throw invalid(`${param}.external.deadline_ms`, `deadline_ms is 0 (the guard's default) to ${MAX_DEADLINE_MS}.`);
    const kept = external.keep_credential && !external.credential;
    const previous = before?.checks.find((candidate) => candidate.name === name)?.external;
    const sameService = previous?.service === external.service;
    let credential = external.credential ?? '';
    if (kept && previous?.credential_sealed && sameService) credential = cipher.open(previous.credential_sealed).credential ?? '';
    fail(
      validateExternalSpec({
        service: external.service ?? '',
        baseUrl: external.base_url ?? '',
        credential,
        settings: { ...external.settings },
        deadlineMs: deadline,
      }),
    );
    let sealed = '';
    if (kept && sameService) sealed = previous?.credential_sealed ?? '';
    else if (credential) {
      if (!cipher.configured)
        throw invalid(`${param}.external.credential`, 'This guard has no GUARD_SECRETS_KEY, so it cannot store a credential for an outside check.');
      if (credential.length > 8_192 || /[\r\n\0]/.test(credential))
        throw invalid(`${param}.external.credential`, 'A credential is one line of at most 8192 characters.');
      sealed = cipher.seal({ credential });
    }
    stored.external = {
      service: external.service ?? '',
      base_url: external.base_url ?? '',
      credential_sealed: sealed,
      settings: { ...external.settings },
      deadline_ms: deadline,
    };
  }
  return stored;
}

function ids(values: readonly string[], param: string, pattern: RegExp, what: string): string[] {
  if (values.length > MAX_ATTACHED) throw invalid(param, `An attachment lists at most ${MAX_ATTACHED} ${what}.`);
  for (const value of values) if (!pattern.test(value)) throw invalid(param, `"${value.slice(0, 80)}" is not ${what.replace(/s$/, '')}.`);
  return [...new Set(values)].sort();
}

/**
 * The policy to store for `input`, or an `invalid_request` GatewayError. `before` is the policy
 * stored under the same name, whose sealed credentials a check may keep.
 */
export function validatePolicy(input: PolicyOutput | undefined, options: { before?: StoredPolicy; cipher: SecretCipher; now: number }): StoredPolicy {
  if (!input) throw invalid('policy', 'A policy is required.');
  const name = input.name ?? '';
  if (!POLICY_NAME_PATTERN.test(name)) throw invalid('name', 'A policy name is 1 to 64 lowercase letters, digits or "-", starting with a letter or digit.');
  const description = input.description ?? '';
  if (description.length > MAX_DESCRIPTION) throw invalid('description', `description has at most ${MAX_DESCRIPTION} characters.`);
  if (input.checks.length === 0 || input.checks.length > MAX_CHECKS) throw invalid('checks', `A policy has 1 to ${MAX_CHECKS} checks.`);
  const checks = input.checks.map((check, index) => validatedCheck(check, index, options.before, options.cipher));
  const names = new Set<string>();
  for (const [index, check] of checks.entries()) {
    if (names.has(check.name)) throw invalid(`checks[${index}].name`, `Two checks are named "${check.name}": a check's name is unique in its policy.`);
    names.add(check.name);
  }
  const attachment = input.attachment;
  const tokens = input.stream_window?.tokens ?? 0;
  const ms = input.stream_window?.ms ?? 0;
  if (!Number.isInteger(tokens) || tokens < 0 || tokens > MAX_WINDOW_TOKENS)
    throw invalid('stream_window.tokens', `stream_window.tokens is 0 (the guard's default) to ${MAX_WINDOW_TOKENS}.`);
  if (!Number.isInteger(ms) || ms < 0 || ms > MAX_WINDOW_MS)
    throw invalid('stream_window.ms', `stream_window.ms is 0 (the guard's default) to ${MAX_WINDOW_MS}.`);
  return {
    name,
    description,
    enabled: input.enabled === true,
    mode: storedMode(input.mode),
    on_error: storedOnError(input.on_error),
    attachment: {
      key_ids: ids(attachment?.key_ids ?? [], 'attachment.key_ids', /^key_[A-Za-z0-9_-]{1,100}$/, 'key ids'),
      team_ids: ids(attachment?.team_ids ?? [], 'attachment.team_ids', /^team_[A-Za-z0-9_-]{1,100}$/, 'team ids'),
      models: ids(attachment?.models ?? [], 'attachment.models', /^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,199}$/, 'model ids'),
      all_requests: attachment?.all_requests === true,
    },
    checks,
    stream_window: { tokens, ms },
    restore_masked: input.restore_masked === true,
    updated_at_ms: options.now,
  };
}
