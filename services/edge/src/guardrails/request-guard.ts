/**
 * A guardrail decision for one request: which policies apply at each point (from the policy
 * view, without a call), the guard's Check for a point's texts with the policies' deadline and
 * on_error applied, the placeholders of masked input to put back into the answer, and every
 * decision made, for the answer's `gateway.guardrails` and the usage event.
 */
import { GatewayError } from '@gateway/grpc';
import { checkTexts } from '../clients/guard-checks.js';
import type { CheckRequest, CheckResponseOutput, GuardDecisionOutput, GuardrailDecision, GuardServiceClient } from '@gateway/proto';
import type { AppliedPolicy, GuardPoint, GuardText, RequestGuard } from './guard-context.js';
import { GuardCallCounts, type GuardCallFailure } from './guard-call-counts.js';
import type { GuardSubject, PolicyView } from './policy-view.js';

/** What the guard needs of the request besides its texts. */
export interface GuardedRequestIdentity extends GuardSubject {
  requestId: string;
  /** Which API: `chat`, `responses`, `messages`, `embeddings`, `mcp`. */
  api: string;
  signal?: AbortSignal;
  traceparent?: string | undefined;
}

/** The guard's client and the edge's margin over a policy's deadline. */
export interface GuardChecks {
  client: GuardServiceClient;
  policies: PolicyView;
  /** EDGE_GUARD_DEADLINE_MARGIN_MS. */
  marginMs: number;
  /** The edge's counts of its Check calls, for its metrics. */
  counts: GuardCallCounts;
}

/** The guard's checks of an edge; undefined without GUARD_SERVICE_ADDR. */
export function guardChecksOf(deps: {
  guard?: GuardServiceClient | undefined;
  policies?: PolicyView | undefined;
  guardCalls?: GuardCallCounts | undefined;
  config: { EDGE_GUARD_DEADLINE_MARGIN_MS: number };
}): GuardChecks | undefined {
  if (!deps.guard || !deps.policies) return undefined;
  return { client: deps.guard, policies: deps.policies, marginMs: deps.config.EDGE_GUARD_DEADLINE_MARGIN_MS, counts: deps.guardCalls ?? new GuardCallCounts() };
}

const NO_POLICIES: readonly AppliedPolicy[] = Object.freeze([]);
/** Placeholders as the guard writes them: `<CARD_1>`, `<AWS_ACCESS_KEY_2>`. */
const PLACEHOLDER = /<[A-Z][A-Z0-9_]*_\d+>/g;
/** Why a check could not run, by the gRPC status the call failed with. */
const DEADLINE_EXCEEDED = 4;

/** The policies of a request at each point it may be checked at. */
export type PoliciesByPoint = Partial<Record<GuardPoint, readonly AppliedPolicy[]>>;

/** The guard of one request; see RequestGuard. */
export class GuardedRequest implements RequestGuard {
  readonly decisions: GuardDecisionOutput[] = [];
  /** The originals of the input's masked spans, by placeholder; only for restore_masked policies. */
  private readonly originals = new Map<string, string>();

  constructor(
    private readonly checks: GuardChecks,
    private readonly identity: GuardedRequestIdentity,
    private readonly byPoint: PoliciesByPoint,
  ) {}

  get policies(): readonly AppliedPolicy[] {
    return this.byPoint.POINT_OUTPUT ?? NO_POLICIES;
  }

  get streamWindow(): { tokens: number; ms: number } {
    const policies = this.policies;
    if (policies.length === 0) return { tokens: 0, ms: 0 };
    return {
      tokens: Math.min(...policies.map((policy) => policy.streamWindow.tokens)),
      ms: Math.min(...policies.map((policy) => policy.streamWindow.ms)),
    };
  }

  /** Whether any policy applies at a point. */
  covers(point: GuardPoint): boolean {
    return (this.byPoint[point]?.length ?? 0) > 0;
  }

  /** Whether the answer needs this guard: an output policy applies, or masked input is to be put back. */
  get guardsOutput(): boolean {
    return this.covers('POINT_OUTPUT') || this.originals.size > 0;
  }

  async check(point: GuardPoint, texts: readonly GuardText[], final: boolean): Promise<CheckResponseOutput> {
    const policies = this.byPoint[point] ?? NO_POLICIES;
    if (policies.length === 0 || texts.length === 0) return passed(texts, final);
    const { client, marginMs } = this.checks;
    const { requestId, keyId, teamId, model, api, signal, traceparent } = this.identity;
    const request: CheckRequest = {
      request_id: requestId,
      key_id: keyId,
      team_id: teamId,
      model,
      api,
      point,
      policies: policies.map((policy) => policy.name),
      texts: texts.map(({ path, text }) => ({ path, text })),
      final,
    };
    const deadlineMs = Math.max(...policies.map((policy) => policy.deadlineMs)) + marginMs;
    let response: CheckResponseOutput;
    this.checks.counts.sent += 1;
    try {
      response = await checkTexts(client, request, {
        deadlineMs: Math.max(1, deadlineMs),
        requestId,
        ...(signal && { signal }),
        ...(traceparent && { traceparent }),
      });
    } catch (error) {
      const reason = reasonOf(error);
      this.checks.counts.failedBy[reason] += 1;
      response = onErrorResponse(point, policies, texts, reason);
    }
    this.decisions.push(...response.decisions);
    for (const placeholder of response.placeholders ?? []) {
      if (placeholder.placeholder) this.originals.set(placeholder.placeholder, placeholder.original ?? '');
    }
    return response;
  }

  restore(text: string): string {
    if (this.originals.size === 0 || !text.includes('<')) return text;
    return text.replace(PLACEHOLDER, (placeholder) => this.originals.get(placeholder) ?? placeholder);
  }
}

/** The end of a text that may be the start of a placeholder the next window completes (`<CAR`). */
const PARTIAL_PLACEHOLDER = /<[A-Z0-9_]{0,40}$/;

/**
 * The answer to a point no policy covers: every text as it is. In a stream window that is not final, a tail that may be the start of a
 * placeholder is held back, so that a placeholder split across chunks is still put back whole.
 */
function passed(texts: readonly GuardText[], final = true): CheckResponseOutput {
  return {
    blocked: false,
    blocked_by_policy: '',
    blocked_by_check: '',
    texts: texts.map(({ text }) => {
      const held = final ? 0 : (PARTIAL_PLACEHOLDER.exec(text)?.[0].length ?? 0);
      return { text: text.slice(0, text.length - held), held_chars: held };
    }),
    decisions: [],
    placeholders: [],
  };
}

/** Why a Check failed, as a decision's `error` says it. */
function reasonOf(error: unknown): GuardCallFailure {
  const code = error instanceof GatewayError ? error.code : (error as { code?: number }).code;
  return code === DEADLINE_EXCEEDED ? 'deadline_exceeded' : 'unavailable';
}

/**
 * What a Check that could not run decides: each policy's on_error, recorded as a decision with
 * its reason; blocked when an enforced policy says block; the texts unchanged.
 */
export function onErrorResponse(point: GuardPoint, policies: readonly AppliedPolicy[], texts: readonly GuardText[], reason: string): CheckResponseOutput {
  const response = passed(texts);
  for (const policy of policies) {
    const block = policy.onError === 'block';
    response.decisions.push({
      policy: policy.name,
      check: '',
      point,
      action: block ? 'ACTION_BLOCK' : 'ACTION_FLAG',
      enforced: policy.enforced,
      entity: '',
      path: '',
      start: -1,
      end: -1,
      error: reason,
    });
    if (block && policy.enforced && !response.blocked) {
      response.blocked = true;
      response.blocked_by_policy = policy.name;
      response.blocked_by_check = '';
    }
  }
  return response;
}

/** The guard of a request whose subject some policy covers at one of `points`; undefined when none does (then nothing is allocated but the lookups). */
export function guardFor(checks: GuardChecks | undefined, identity: GuardedRequestIdentity, points: readonly GuardPoint[]): GuardedRequest | undefined {
  if (!checks) return undefined;
  let byPoint: PoliciesByPoint | undefined;
  for (const point of points) {
    const policies = checks.policies.applying(point, identity);
    if (policies.length === 0) continue;
    byPoint ??= {};
    byPoint[point] = policies;
  }
  return byPoint ? new GuardedRequest(checks, identity, byPoint) : undefined;
}

const POINT_NAMES: Record<string, string> = {
  POINT_INPUT: 'input',
  POINT_OUTPUT: 'output',
  POINT_TOOL_ARGUMENTS: 'tool_arguments',
  POINT_TOOL_RESULT: 'tool_result',
};
const ACTION_NAMES: Record<string, string> = { ACTION_BLOCK: 'block', ACTION_MASK: 'mask', ACTION_FLAG: 'flag' };

/** A decision as the answer's `gateway.guardrails` and the usage event show it. */
export interface GuardrailJson extends GuardrailDecision {
  policy: string;
  check: string;
  point: string;
  action: string;
  enforced: boolean;
  entity: string;
  /** Only for a check that could not run. */
  error?: string;
}

/** A decision as the answer's `gateway.guardrails` and the usage event show it: never a span or its text. */
export function decisionJson(decision: GuardDecisionOutput): GuardrailJson {
  return {
    policy: decision.policy ?? '',
    check: decision.check ?? '',
    point: POINT_NAMES[decision.point ?? ''] ?? '',
    action: ACTION_NAMES[decision.action ?? ''] ?? '',
    enforced: decision.enforced === true,
    entity: decision.entity ?? '',
    ...(decision.error ? { error: decision.error } : {}),
  };
}

/** The message of a refusal by a policy: which policy and check, never what was found. */
export function blockedMessage(what: string, response: CheckResponseOutput): string {
  const check = response.blocked_by_check ? ` check ${response.blocked_by_check}` : ' (its check could not run)';
  return `${what} was blocked by policy ${response.blocked_by_policy}${check}.`;
}
