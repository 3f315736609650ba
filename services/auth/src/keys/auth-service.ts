import { callTraceparent, GatewayError, serveStreamedCalls, unary } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import { endWithError, metric, NO_TRACING, type prometheus, serviceMetrics, SpanKind, type Tracing } from '@gateway/observability';
import type {
  AuthServiceHandlers,
  BudgetOutput,
  BudgetState,
  CheckKeyRequestOutput,
  CheckKeyResponse,
  CreateKeyRequestOutput,
  CreateKeyResponse,
  DecideRequestOutput,
  DecideResponse,
  GetKeyRequestOutput,
  KeyInfo,
  LimitState,
  ListKeysRequestOutput,
  ListKeysResponse,
  MinuteLimitOutput,
  RevokeKeyRequestOutput,
  SettleUsageRequestOutput,
  SettleUsageResponse,
  UpdateKeyRequestOutput,
} from '@gateway/proto';
import type { Auditor } from '../audit/auditor.js';
import { toKeyInfo } from '../info-messages.js';
import type { TeamStore } from '../teams/team-store.js';
import { hashSecret, isWellFormedSecret, randomBase62 } from './key-secret.js';
import { KeyExistsError, KeyInputError, TeamNotFoundError, type KeyChanges, type KeyStore } from './key-store.js';
import { planFromProto, plansSource, planToProto, type BudgetLimit, type Limit, type PlansSource, type PlanTable } from '../quota/plans.js';
import {
  type QuotaDecision,
  type QuotaLimiter,
  RESERVATION_PART_PATTERN,
  ReservationIdError,
  type BudgetDecisionState,
  type WindowState,
} from '../quota/quota-limiter.js';

/** What the auth service needs. */
export interface AuthServiceDependencies {
  keys: KeyStore;
  limiter: QuotaLimiter;
  /** The plans: a fixed table, or a reloaded plans file (each answer reads its `current` table). */
  plans: PlanTable | PlansSource;
  logger: Logger;
  /** Where the service's metrics go; omitted in tests that do not look at them. */
  registry?: prometheus.Registry;
  /** Traces (OTLP), when configured; off by default. */
  tracing?: Tracing;
  /** Records each key change (create, update, revoke) in the audit trail. */
  auditor: Auditor;
  /** The teams, whose MCP tool allow-lists a CheckKey with `mcp` reads; absent: none is read. */
  teams?: Pick<TeamStore, 'get'>;
}

/** The longest model id a CheckKey may name. */
export const MAX_MODEL_LENGTH = 256;

/** A decision about a live key. */
type LiveDecision = Exclude<QuotaDecision, { kind: 'unknown_key' | 'revoked' }>;

/** The message of every invalid-key denial: it never echoes the key. */
export const INVALID_KEY_MESSAGE = 'Incorrect API key provided. You can find your API key in your account settings.';
/** The message of a revoked-key denial. */
export const REVOKED_KEY_MESSAGE = 'This API key has been revoked.';

/**
 * A limit message as received (a MinuteLimit or a Budget): its positive `field`, 'unlimited', null
 * for plan_default (remove the override), undefined when absent. A `field` that is not a positive
 * integer is refused with the message's name, `param`.
 */
function fromLimitMessage<Field extends 'per_minute' | 'micro_usd'>(
  message: ({ value?: string; unlimited?: boolean; plan_default?: boolean } & { [name in Field]?: number | string }) | null | undefined,
  field: Field,
  param: string,
): number | 'unlimited' | null | undefined {
  if (!message) return undefined;
  if (message.value === 'unlimited' && message.unlimited) return 'unlimited';
  if (message.value === 'plan_default' && message.plan_default) return null;
  if (message.value === field) {
    const value = Number(message[field]);
    if (Number.isSafeInteger(value) && value > 0) return value;
  }
  throw GatewayError.of('invalid_request', `${param} must be a positive ${field}, unlimited or plan_default.`, { param });
}

/**
 * A MinuteLimit as received: a limit, null for plan_default (remove the override), undefined when
 * absent. A per_minute that is not positive is refused with the field's name.
 */
export function fromMinuteLimit(message: MinuteLimitOutput | null | undefined, param: string): Limit | null | undefined {
  return fromLimitMessage(message, 'per_minute', param);
}

/**
 * A Budget as received: micro-USD, null for plan_default (remove the override), undefined when
 * absent. A micro_usd that is not positive is refused with the field's name.
 */
export function fromBudget(message: BudgetOutput | null | undefined, param: string): BudgetLimit | null | undefined {
  return fromLimitMessage(message, 'micro_usd', param);
}

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

/** The AuthService's handlers, and the drain of its Decide streams on shutdown. */
export interface AuthService {
  handlers: AuthServiceHandlers;
  /** Asks every Decide caller to move to another replica; resolves when their streams ended. */
  drain(patienceMs: number): Promise<void>;
}

/**
 * The AuthService. CheckKey answers a decision for every key it can look up; a key store failure
 * is an UNAVAILABLE error (never an allow), so the edge refuses the request with a 503. Decide
 * runs the very same CheckKey and SettleUsage functions for each message of its stream.
 */
export function createAuthService(dependencies: AuthServiceDependencies): AuthService {
  const { keys, limiter, logger, auditor, teams } = dependencies;
  const plans = plansSource(dependencies.plans);
  const tracing = dependencies.tracing ?? NO_TRACING;
  // biome-ignore format: one metric a line, a table of name, help and the label each is counted by
  const { decisions, storeErrors, settlements } = serviceMetrics(dependencies.registry, {
    decisions: metric.counterBy('gateway_auth_decisions_total', 'CheckKey decisions, by decision.', 'decision'),
    storeErrors: metric.counter('gateway_auth_store_errors_total', 'Key store (Redis) operations that failed.'),
    settlements: metric.counterBy('gateway_auth_settlements_total', 'SettleUsage calls, by outcome.', 'outcome'),
    decideStreams: metric.gauge('gateway_auth_decide_streams_open', 'Decide streams open from callers (edges).', () => decide.openStreams),
  });
  const report = (error: unknown, method: string) => logger.error({ err: error, method }, 'auth handler failed');

  /** Runs a key store operation, turning a Redis failure into UNAVAILABLE with the cause logged. */
  async function store<T>(operation: () => Promise<T>, message: string, requestId?: string): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      if (error instanceof KeyExistsError || error instanceof TeamNotFoundError || error instanceof GatewayError) throw error;
      if (error instanceof KeyInputError) throw GatewayError.of('invalid_request', error.message, { param: error.param });
      if (error instanceof ReservationIdError) throw GatewayError.of('invalid_request', error.message, { param: 'reservation_id' });
      storeErrors.inc();
      logger.error({ err: { message: (error as Error).message }, request_id: requestId }, 'key store unavailable');
      throw GatewayError.of('auth_unavailable', message, { retryable: true, cause: error });
    }
  }

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

  async function createKey(request: CreateKeyRequestOutput): Promise<CreateKeyResponse> {
    const plan = planFromProto(request.plan);
    if (!plan)
      throw GatewayError.of('invalid_request', 'A plan is required: PLAN_STARTER, PLAN_PRO or PLAN_ENTERPRISE.', {
        param: 'plan',
      });
    const secret = request.secret || undefined;
    if (secret !== undefined && !isWellFormedSecret(secret)) {
      throw GatewayError.of('invalid_request', 'A secret must be "br-" followed by at least 32 letters or digits.', {
        param: 'secret',
      });
    }
    const requests = fromMinuteLimit(request.requests_per_minute_override, 'requests_per_minute_override') ?? undefined;
    const tokens = fromMinuteLimit(request.tokens_per_minute_override, 'tokens_per_minute_override') ?? undefined;
    const fallbacks = request._catalog_fallbacks_override === 'catalog_fallbacks_override' ? request.catalog_fallbacks_override === true : undefined;
    const daily = fromBudget(request.daily_budget_override, 'daily_budget_override') ?? undefined;
    const monthly = fromBudget(request.monthly_budget_override, 'monthly_budget_override') ?? undefined;
    const teamId = request.team_id ?? '';
    try {
      const created = await store(
        () =>
          keys.create({
            plan,
            name: request.name ?? '',
            secret,
            requests_per_minute_override: requests,
            tokens_per_minute_override: tokens,
            routing_policy: request.routing_policy ?? '',
            catalog_fallbacks_override: fallbacks,
            daily_budget_override: daily,
            monthly_budget_override: monthly,
            allowed_models: request.allowed_models ? request.allowed_models.models : undefined,
            allowed_mcp_tools: request.allowed_mcp_tools ? request.allowed_mcp_tools.tools : undefined,
            team_id: teamId,
            log_bodies: request.log_bodies === true,
          }),
        'The key store is unavailable.',
      );
      logger.info({ key_id: created.key.key_id, plan, team_id: teamId || undefined }, 'key created');
      return { key: toKeyInfo(created.key, plans.current), secret: created.secret };
    } catch (error) {
      if (error instanceof KeyExistsError) throw GatewayError.of('key_exists', 'A key with this secret already exists.', { param: 'secret' });
      if (error instanceof TeamNotFoundError) throw GatewayError.of('team_not_found', 'No team has this id.', { param: 'team_id' });
      throw error;
    }
  }

  async function listKeys(request: ListKeysRequestOutput): Promise<ListKeysResponse> {
    const teamId = request.team_id || undefined;
    const all = await store(() => keys.list(teamId), 'The key store is unavailable.');
    return { keys: all.map((key) => toKeyInfo(key, plans.current)) };
  }

  function notFound(): GatewayError {
    return GatewayError.of('key_not_found', 'No key has this id.', { param: 'key_id' });
  }

  async function getKey(request: GetKeyRequestOutput): Promise<KeyInfo> {
    const keyId = request.key_id ?? '';
    const key = keyId ? await store(() => keys.get(keyId), 'The key store is unavailable.') : undefined;
    if (!key) throw notFound();
    return toKeyInfo(key, plans.current);
  }

  async function updateKey(request: UpdateKeyRequestOutput): Promise<KeyInfo> {
    const changes: KeyChanges = {};
    if (request.plan !== undefined && request.plan !== 'PLAN_UNSPECIFIED') {
      const plan = planFromProto(request.plan);
      if (!plan) throw GatewayError.of('invalid_request', 'plan must be PLAN_STARTER, PLAN_PRO or PLAN_ENTERPRISE.', { param: 'plan' });
      changes.plan = plan;
    }
    if (request._name === 'name') changes.name = request.name ?? '';
    if (request._routing_policy === 'routing_policy') changes.routing_policy = request.routing_policy ?? '';
    if (request._log_bodies === 'log_bodies') changes.log_bodies = request.log_bodies === true;
    const requests = fromMinuteLimit(request.requests_per_minute_override, 'requests_per_minute_override');
    const tokens = fromMinuteLimit(request.tokens_per_minute_override, 'tokens_per_minute_override');
    if (requests !== undefined) changes.requests_per_minute_override = requests;
    if (tokens !== undefined) changes.tokens_per_minute_override = tokens;
    const daily = fromBudget(request.daily_budget_override, 'daily_budget_override');
    const monthly = fromBudget(request.monthly_budget_override, 'monthly_budget_override');
    if (daily !== undefined) changes.daily_budget_override = daily;
    if (monthly !== undefined) changes.monthly_budget_override = monthly;
    const fallbacksSet = request._catalog_fallbacks_override === 'catalog_fallbacks_override';
    if (fallbacksSet && request.catalog_fallbacks_plan_default) {
      throw GatewayError.of('invalid_request', 'Send either catalog_fallbacks_override or catalog_fallbacks_plan_default, not both.', {
        param: 'catalog_fallbacks_override',
      });
    }
    if (fallbacksSet) changes.catalog_fallbacks_override = request.catalog_fallbacks_override === true;
    else if (request.catalog_fallbacks_plan_default) changes.catalog_fallbacks_override = null;
    if (request.allowed_models && request.clear_allowed_models) {
      throw GatewayError.of('invalid_request', 'Send either allowed_models or clear_allowed_models, not both.', { param: 'allowed_models' });
    }
    if (request.allowed_models) changes.allowed_models = request.allowed_models.models;
    else if (request.clear_allowed_models) changes.allowed_models = null;
    if (request.allowed_mcp_tools && request.clear_allowed_mcp_tools) {
      throw GatewayError.of('invalid_request', 'Send either allowed_mcp_tools or clear_allowed_mcp_tools, not both.', { param: 'allowed_mcp_tools' });
    }
    if (request.allowed_mcp_tools) changes.allowed_mcp_tools = request.allowed_mcp_tools.tools;
    else if (request.clear_allowed_mcp_tools) changes.allowed_mcp_tools = null;
    const keyId = request.key_id ?? '';
    const updated = keyId ? await store(() => keys.update(keyId, changes), 'The key store is unavailable.') : undefined;
    if (!updated) throw notFound();
    logger.info({ key_id: updated.key_id, changed: Object.keys(changes) }, 'key updated');
    return toKeyInfo(updated, plans.current);
  }

  async function revokeKey(request: RevokeKeyRequestOutput): Promise<KeyInfo> {
    const keyId = request.key_id ?? '';
    const revoked = keyId ? await store(() => keys.revoke(keyId), 'The key store is unavailable.') : undefined;
    if (!revoked) throw notFound();
    logger.info({ key_id: revoked.key_id }, 'key revoked');
    return toKeyInfo(revoked, plans.current);
  }

  /** A key's public facts before a change, for the audit trail; undefined for an unknown id. */
  async function keyBefore(request: { key_id?: string }): Promise<KeyInfo | undefined> {
    const keyId = request.key_id ?? '';
    const key = keyId ? await store(() => keys.get(keyId), 'The key store is unavailable.') : undefined;
    return key && toKeyInfo(key, plans.current);
  }

  const decide = serveStreamedCalls<DecideRequestOutput, DecideResponse>({ check_key: checkKey, settle_usage: settleUsage }, 'Decide', report);
  const handlers: AuthServiceHandlers = {
    CheckKey: unary(checkKey, 'CheckKey', report),
    CreateKey: unary(
      auditor.audited(createKey, { action: 'key.create', target: (_, created) => created.key?.key_id ?? '', after: (created) => created.key }),
      'CreateKey',
      report,
    ),
    ListKeys: unary(listKeys, 'ListKeys', report),
    RevokeKey: unary(
      auditor.audited(revokeKey, { action: 'key.revoke', target: (request) => request.key_id ?? '', before: keyBefore, after: (key) => key }),
      'RevokeKey',
      report,
    ),
    GetKey: unary(getKey, 'GetKey', report),
    UpdateKey: unary(
      auditor.audited(updateKey, { action: 'key.update', target: (request) => request.key_id ?? '', before: keyBefore, after: (key) => key }),
      'UpdateKey',
      report,
    ),
    SettleUsage: unary(settleUsage, 'SettleUsage', report),
    Decide: decide.handler,
  };
  return { handlers, drain: decide.drain };
}
