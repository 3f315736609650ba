/**
 * The quota decision's RPCs of the AuthService: CheckKey answers a decision for every key it can
 * look up; a key store failure is an UNAVAILABLE error (never an allow), so the edge refuses the
 * request with a 503. SettleUsage settles a reservation with the tokens used. Decide runs the very
 * same CheckKey and SettleUsage functions for each message of its stream.
 */
import { callTraceparent, GatewayError, serveStreamedCalls, unary } from '@gateway/grpc';
import { endWithError, metric, type prometheus, serviceMetrics, SpanKind, type Tracing } from '@gateway/observability';
import {
  type AuthServiceHandlers,
  type BudgetState,
  type CheckKeyRequestOutput,
  type CheckKeyResponse,
  type DecideRequestOutput,
  type DecideResponse,
  type LimitState,
  planToProto,
  type SettleUsageRequestOutput,
  type SettleUsageResponse,
} from '@gateway/proto';
import { isWellFormedSecret } from '../keys/key-secret.js';
import type { KeyStore } from '../keys/key-store.js';
import type { FailureReport, StoreCall } from '../shared/handler-input.js';
import { hashSecret, randomBase62 } from '../shared/ids.js';
import type { TeamStore } from '../teams/team-store.js';
import { type BudgetDecisionState, type QuotaDecision, type QuotaLimiter, RESERVATION_PART_PATTERN, type WindowState } from './quota-limiter.js';

/** What the decision's RPCs need. */
export interface DecisionHandlerDependencies {
  limiter: QuotaLimiter;
  /** The keys, whose MCP tool allow-lists a CheckKey with `mcp` reads. */
  keys: Pick<KeyStore, 'get'>;
  /** The teams, whose MCP tool allow-lists a CheckKey with `mcp` reads; absent: none is read. */
  teams?: Pick<TeamStore, 'get'>;
  tracing: Tracing;
  /** Where the decisions' metrics go; omitted in tests that do not look at them. */
  registry?: prometheus.Registry;
  store: StoreCall;
  report: FailureReport;
}

/** The decision's handlers, and the drain of the Decide streams on shutdown. */
export interface DecisionHandlers {
  handlers: Pick<AuthServiceHandlers, 'CheckKey' | 'SettleUsage' | 'Decide'>;
  /** Asks every Decide caller to move to another replica; resolves when their streams ended. */
  drain(patienceMs: number): Promise<void>;
}

/** The longest model id a CheckKey may name. */
export const MAX_MODEL_LENGTH = 256;

/** A decision about a live key. */
type LiveDecision = Exclude<QuotaDecision, { kind: 'unknown_key' | 'revoked' }>;

/** The message of every invalid-key denial: it never echoes the key. */
export const INVALID_KEY_MESSAGE = 'Incorrect API key provided. You can find your API key in your account settings.';
/** The message of a revoked-key denial. */
export const REVOKED_KEY_MESSAGE = 'This API key has been revoked.';

/** The budget state of a decision as the BudgetState message. */
export function budgetState(budget: BudgetDecisionState): BudgetState {
  if (!budget.limited) return { limited: false };
  return {
    limited: true,
    remaining_pico_usd: budget.remainingPicoUsd,
    spent_today_pico_usd: budget.spentTodayPicoUsd,
    spent_month_pico_usd: budget.spentMonthPicoUsd,
    monthly_exhausted: budget.monthlyExhausted,
  };
}

/** Pico-USD as USD for a message: at most six decimals, as budgets are set. */
function usd(pico: number): string {
  return `$${(pico / 1e12).toFixed(6).replace(/\.?0+$/, '')}`;
}

/** A window's state as the LimitState the edge turns into x-ratelimit headers. */
export function limitState(window: WindowState): LimitState {
  if (window.limit < 0) return { limit: 0, remaining: 0, reset_ms: 0, unlimited: true };
  return { limit: window.limit, remaining: Math.max(0, window.limit - window.used), reset_ms: Math.max(0, window.resetMs), unlimited: false };
}

/** The window state a denial names: the team's when the team's limit refused, else the key's. */
function deniedLimit(result: Extract<QuotaDecision, { budget: unknown }>, dimension: 'requests' | 'tokens'): WindowState {
  return result.deniedByTeam && result.team ? result.team[dimension] : result[dimension];
}

/** Adds a member key's team state to a decision. */
function addTeamState(response: CheckKeyResponse, team: NonNullable<Extract<QuotaDecision, { budget: unknown }>['team']>): void {
  response.team_id = team.teamId;
  response.team_requests = limitState(team.requests);
  response.team_tokens = limitState(team.tokens);
  response.team_budget = budgetState(team.budget);
  if (team.allowedModels) response.team_model_allow_list = { models: team.allowedModels };
}

function seconds(ms: number): string {
  return `${Math.max(1, Math.ceil(ms / 1000))}s`;
}

/** Creates CheckKey, SettleUsage and Decide; see the module comment. */
export function createDecisionHandlers(dependencies: DecisionHandlerDependencies): DecisionHandlers {
  const { limiter, keys, teams, tracing, store, report } = dependencies;
  // biome-ignore format: one metric a line, a table of name, help and the label each is counted by
  const { decisions, settlements } = serviceMetrics(dependencies.registry, {
    decisions: metric.counterBy('gateway_auth_decisions_total', 'CheckKey decisions, by decision.', 'decision'),
    settlements: metric.counterBy('gateway_auth_settlements_total', 'SettleUsage calls, by outcome.', 'outcome'),
    decideStreams: metric.gauge('gateway_auth_decide_streams_open', 'Decide streams open from callers (edges).', () => decide.openStreams),
  });

  /** An invalid-key denial: the reason for the caller's code, the message for its user. */
  function deny(reason: 'DENY_REASON_UNKNOWN_KEY' | 'DENY_REASON_REVOKED'): CheckKeyResponse {
    decisions.inc({ decision: 'DECISION_DENY_INVALID_KEY' });
    const message = reason === 'DENY_REASON_REVOKED' ? REVOKED_KEY_MESSAGE : INVALID_KEY_MESSAGE;
    return { decision: 'DECISION_DENY_INVALID_KEY', deny_reason: reason, message };
  }

  /** CheckKey, in a span of its own when tracing is on (the caller's span its parent). */
  async function checkKey(request: CheckKeyRequestOutput, context?: unknown): Promise<CheckKeyResponse> {
    const span = tracing.startSpan('auth.check_key', {
      kind: SpanKind.SERVER,
      parent: callTraceparent(context),
      attributes: { 'rpc.system': 'grpc', 'rpc.method': 'CheckKey', 'gateway.check_only': request.check_only === true },
    });
    if (!span) return decideKey(request);
    try {
      const response = await decideKey(request);
      span.setAttributes({ 'gateway.decision': response.decision ?? '', 'gateway.plan': response.plan ?? '' });
      span.end();
      return response;
    } catch (error) {
      endWithError(span, error instanceof GatewayError ? error.reason : 'internal_error');
      throw error;
    }
  }

  async function decideKey(request: CheckKeyRequestOutput): Promise<CheckKeyResponse> {
    const secret = request.api_key ?? '';
    if (!isWellFormedSecret(secret)) return deny('DENY_REASON_UNKNOWN_KEY');
    const reserve = Number(request.reserve_tokens ?? 0);
    if (!Number.isSafeInteger(reserve) || reserve < 0)
      throw GatewayError.of('invalid_request', 'reserve_tokens must be a non-negative integer.', { param: 'reserve_tokens' });
    const part = request.reservation_id || randomBase62(22);
    if (!RESERVATION_PART_PATTERN.test(part))
      throw GatewayError.of('invalid_request', 'reservation_id must be 1 to 64 letters, digits, "_" or "-".', {
        param: 'reservation_id',
      });
    const costBound = Number(request.cost_bound_pico_usd ?? 0);
    if (!Number.isSafeInteger(costBound) || costBound < 0)
      throw GatewayError.of('invalid_request', 'cost_bound_pico_usd must be a non-negative integer.', { param: 'cost_bound_pico_usd' });
    const model = request.model ?? '';
    if (model.length > MAX_MODEL_LENGTH) throw GatewayError.of('invalid_request', `model has at most ${MAX_MODEL_LENGTH} characters.`, { param: 'model' });
    const how = { mode: request.check_only ? ('peek' as const) : ('reserve' as const), model, costBoundPicoUsd: costBound };
    const result = await store(() => limiter.check(hashSecret(secret), part, reserve, how), 'The key service cannot decide right now.', request.request_id);
    if (result.kind === 'unknown_key') return deny('DENY_REASON_UNKNOWN_KEY');
    if (result.kind === 'revoked') return deny('DENY_REASON_REVOKED');
    const response: CheckKeyResponse = {
      key_id: result.keyId,
      plan: planToProto(result.plan),
      requests: limitState(result.requests),
      tokens: limitState(result.tokens),
      routing_policy: result.routingPolicy,
      reservation_id: result.reservationId,
      budget: budgetState(result.budget),
      model_allow_lists: result.modelAllowLists.map((models) => ({ models })),
    };
    if (result.logBodies) response.log_bodies = true;
    if (result.team) addTeamState(response, result.team);
    if (result.deniedByTeam) response.denied_by_team = true;
    if (request.mcp) response.mcp_tool_allow_lists = await mcpToolAllowLists(result.keyId, result.team?.teamId ?? '');
    decided(response, result, { reserve, model });
    decisions.inc({ decision: response.decision! });
    return response;
  }

  /**
   * The MCP tool allow-lists of a key and its team, read beside the quota decision for the MCP
   * gateway only (nothing caches key records, so a change applies from the next request).
   */
  async function mcpToolAllowLists(keyId: string, teamId: string): Promise<{ tools: string[] }[]> {
    const [key, team] = await store(
      () => Promise.all([keys.get(keyId), teamId && teams ? teams.get(teamId) : Promise.resolve(undefined)]),
      'The key service cannot decide right now.',
    );
    return [key?.allowed_mcp_tools, team?.allowed_mcp_tools].filter((list): list is string[] => list !== undefined).map((tools) => ({ tools }));
  }

  /** Sets the decision of a live key's response, and its message when it is a denial (naming the team when its limit refused). */
  function decided(response: CheckKeyResponse, result: LiveDecision, { reserve, model }: { reserve: number; model: string }): void {
    const whose = result.deniedByTeam ? "this key's team" : 'this key';
    switch (result.kind) {
      case 'allow':
        response.decision = 'DECISION_ALLOW';
        response.catalog_fallbacks = result.catalogFallbacks;
        break;
      case 'model_not_allowed':
        response.decision = 'DECISION_DENY_MODEL_NOT_ALLOWED';
        response.message = result.deniedByTeam
          ? `This API key's team is not allowed to use the model \`${model}\`.`
          : `This API key is not allowed to use the model \`${model}\`.`;
        break;
      case 'too_large':
        response.decision = 'DECISION_DENY_REQUEST_TOO_LARGE';
        response.message = `Request too large: it needs ${reserve} tokens (the prompt plus the completion budget, max_tokens), but ${whose} allows ${deniedLimit(result, 'tokens').limit} tokens per minute. Reduce max_tokens or the prompt.`;
        break;
      case 'deny_requests':
        response.decision = 'DECISION_DENY_REQUEST_LIMIT';
        response.retry_after_ms = result.retryAfterMs;
        response.message = `Rate limit reached on requests per minute${result.deniedByTeam ? " of this key's team" : ''}: limit ${deniedLimit(result, 'requests').limit}, used ${deniedLimit(result, 'requests').used}. Please try again in ${seconds(result.retryAfterMs)}.`;
        break;
      case 'over_budget': {
        response.decision = 'DECISION_DENY_BUDGET';
        response.retry_after_ms = result.retryAfterMs;
        const { spentTodayPicoUsd, spentMonthPicoUsd, monthlyExhausted } = result.deniedByTeam && result.team ? result.team.budget : result.budget;
        const owner = result.deniedByTeam ? 'team' : 'key';
        response.message = monthlyExhausted
          ? `You exceeded your current quota: ${whose} has spent its monthly budget (${usd(spentMonthPicoUsd)} spent this month, UTC). Ask your administrator to raise the ${owner}'s budget.`
          : `You exceeded your current quota: ${whose} has spent its daily budget (${usd(spentTodayPicoUsd)} spent today, UTC). It resets at 00:00 UTC, in ${seconds(result.retryAfterMs)}.`;
        break;
      }
      case 'deny_tokens':
        response.decision = 'DECISION_DENY_TOKEN_LIMIT';
        response.retry_after_ms = result.retryAfterMs;
        response.message = `Rate limit reached on tokens per minute${result.deniedByTeam ? " of this key's team" : ''}: limit ${deniedLimit(result, 'tokens').limit}, used ${deniedLimit(result, 'tokens').used}, requested ${reserve}. Please try again in ${seconds(result.retryAfterMs)}.`;
        break;
    }
  }

  async function settleUsage(request: SettleUsageRequestOutput): Promise<SettleUsageResponse> {
    const actual = Number(request.actual_tokens ?? 0);
    if (!Number.isSafeInteger(actual) || actual < 0)
      throw GatewayError.of('invalid_request', 'actual_tokens must be a non-negative integer.', { param: 'actual_tokens' });
    const settled = await store(() => limiter.settle(request.reservation_id ?? '', actual), 'The quota store cannot settle right now.', request.request_id);
    settlements.inc({ outcome: settled.outcome });
    const outcome =
      settled.outcome === 'settled'
        ? 'SETTLE_OUTCOME_SETTLED'
        : settled.outcome === 'already_settled'
          ? 'SETTLE_OUTCOME_ALREADY_SETTLED'
          : 'SETTLE_OUTCOME_UNKNOWN_RESERVATION';
    return { outcome, delta_tokens: settled.deltaTokens, tokens_in_window: settled.tokensInWindow };
  }

  const decide = serveStreamedCalls<DecideRequestOutput, DecideResponse>({ check_key: checkKey, settle_usage: settleUsage }, 'Decide', report);
  return {
    handlers: { CheckKey: unary(checkKey, 'CheckKey', report), SettleUsage: unary(settleUsage, 'SettleUsage', report), Decide: decide.handler },
    drain: decide.drain,
  };
}
