/**
 * The admin API as the console uses it: every call on this origin, with the admin token as a
 * bearer token, and every failure as an {@link ApiError} carrying the OpenAI error envelope's
 * fields. A 401 or 403 also reports itself to the console, which forgets the token and returns
 * to the login form.
 */

import type { UsageResultJson } from '../../src/wire/usage-json';

/** A key's plan. */
export type Plan = 'starter' | 'pro' | 'enterprise';
/** The plans, in the order the forms offer them. */
export const PLANS: readonly Plan[] = ['starter', 'pro', 'enterprise'];

/** A per-minute limit: a count, or no limit at all. */
export type Limit = number | 'unlimited';
/** A budget in USD, or none. */
export type Budget = number | 'unlimited';

/** An API key as the admin API shows it; never its secret. */
export interface Key {
  object: 'api_key';
  id: string;
  name: string;
  plan: Plan;
  /** Unix seconds. */
  created_at: number;
  /** Unix seconds; null when never used. */
  last_used_at: number | null;
  revoked: boolean;
  /** In force: the key's overrides, else its plan's; null where neither sets one. */
  limits: { requests_per_minute: Limit | null; tokens_per_minute: Limit | null };
  /** In force; null is no budget. */
  budgets: { daily_usd: number | null; monthly_usd: number | null };
  /** What the key sets itself, over its plan's. */
  overrides: {
    requests_per_minute?: Limit;
    tokens_per_minute?: Limit;
    catalog_fallbacks?: boolean;
    daily_budget_usd?: Budget;
    monthly_budget_usd?: Budget;
  };
  routing_policy: string | null;
  catalog_fallbacks: boolean;
}

/** A new key: the secret is in this one response only. */
export interface CreatedKey extends Key {
  secret: string;
}

/** The body of POST /admin/v1/keys. Absent fields take the plan's values. */
export interface KeyCreation {
  plan: Plan;
  name?: string;
  limits?: { requests_per_minute?: Limit; tokens_per_minute?: Limit };
  budgets?: { daily_usd?: Budget; monthly_usd?: Budget };
}

/** The body of PATCH /admin/v1/keys/:id: absent fields stay; null goes back to the plan's. */
export interface KeyChange {
  plan?: Plan;
  name?: string;
  limits?: { requests_per_minute?: Limit | null; tokens_per_minute?: Limit | null };
  budgets?: { daily_usd?: Budget | null; monthly_usd?: Budget | null };
}

/** A bucket's width in GET /admin/v1/usage. */
export type BucketWidth = 'hour' | 'day';

/** Usage totals, of one group (key, model, plan) where the query groups by it: the edge's own declaration. */
export type UsageResult = UsageResultJson;

/** One non-empty time bucket of a usage page. */
export interface UsageBucket {
  object: 'bucket';
  /** Unix seconds. */
  start_time: number;
  end_time: number;
  results: UsageResult[];
}

/** GET /admin/v1/usage: only non-empty buckets, ascending. */
export interface UsagePage {
  object: 'page';
  bucket: BucketWidth;
  start: number;
  end: number;
  group_by: string[];
  data: UsageBucket[];
  totals: UsageResult;
  has_more: boolean;
  /** Keys left out because their usage could not be read now (a Redis shard failing over). */
  unavailable_key_ids?: string[];
}

/** The query of GET /admin/v1/usage. */
export interface UsageQuery {
  start: number;
  end: number;
  bucket: BucketWidth;
  groupBy: ReadonlyArray<'key' | 'model' | 'plan'>;
  keyId?: string;
}

/** One completion request the gateway handled. */
export interface GatewayRequest {
  object: 'gateway.request';
  id: string;
  request_id: string;
  key_id: string;
  /** Unix milliseconds. */
  created_at: number;
  requested_model: string;
  model: string;
  provider: string;
  stream: boolean;
  outcome: 'completed' | 'cancelled' | 'failed';
  /** Why a failed request failed (the error envelope's code), where the gateway says. */
  error_code?: string | null;
  latency_ms: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost_usd: number;
  fallbacks: number;
  /** For `"model": "auto"` only. */
  auto: { score: number; tier: string; policy: string } | null;
}

/** A model's health as the gateway sees it. */
export interface ModelHealth {
  id: string;
  provider: string;
  available: boolean;
  retry_after_ms: number | null;
  quality_tier: string | null;
}

interface List<T> {
  object: 'list';
  data: T[];
}

/** A failed call: the HTTP status (0 when the gateway could not be reached) and the envelope's fields. */
export class ApiError extends Error {
  readonly status: number;
  readonly type: string | null;
  readonly code: string | null;
  readonly param: string | null;

  constructor(status: number, message: string, details: { type?: string | null; code?: string | null; param?: string | null } = {}) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.type = details.type ?? null;
    this.code = details.code ?? null;
    this.param = details.param ?? null;
  }

  /** Whether the token itself was refused: the console must ask for it again. */
  get refusesToken(): boolean {
    return this.status === 401 || this.status === 403;
  }
}

/** The error a failed response stands for, from its envelope when it has one. */
async function errorOf(response: Response): Promise<ApiError> {
  const fallback = `The gateway answered ${response.status}${response.statusText ? ` ${response.statusText}` : ''}.`;
  try {
    const body = (await response.json()) as { error?: { message?: unknown; type?: unknown; code?: unknown; param?: unknown } };
    const error = body?.error;
    if (error && typeof error.message === 'string' && error.message) {
      const text = (value: unknown) => (typeof value === 'string' ? value : null);
      return new ApiError(response.status, error.message, { type: text(error.type), code: text(error.code), param: text(error.param) });
    }
  } catch {
    // Not JSON (a proxy's error page): the status says enough.
  }
  return new ApiError(response.status, fallback);
}

/** The admin API with one token. */
export class AdminApi {
  readonly #token: string;
  readonly #onTokenRefused: (error: ApiError) => void;

  /** `onTokenRefused` is told of every 401 and 403 before the call's promise rejects with it. */
  constructor(token: string, onTokenRefused: (error: ApiError) => void) {
    this.#token = token;
    this.#onTokenRefused = onTokenRefused;
  }

  async #call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.#token}`, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      // `credentials: 'omit'`: the token is the only credential; no cookie ever goes along.
      response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit', cache: 'no-store' });
    } catch (error) {
      throw new ApiError(0, `Could not reach the gateway: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (!response.ok) {
      const error = await errorOf(response);
      if (error.refusesToken) this.#onTokenRefused(error);
      throw error;
    }
    return (await response.json()) as T;
  }

  /** Every key, revoked ones included. */
  async listKeys(): Promise<Key[]> {
    return (await this.#call<List<Key>>('GET', '/admin/v1/keys')).data;
  }

  /** Creates a key; the answer carries its secret, which is never shown again. */
  createKey(creation: KeyCreation): Promise<CreatedKey> {
    return this.#call('POST', '/admin/v1/keys', creation);
  }

  /** Changes a key's plan, name, limits or budgets. */
  updateKey(id: string, change: KeyChange): Promise<Key> {
    return this.#call('PATCH', `/admin/v1/keys/${encodeURIComponent(id)}`, change);
  }

  /** Revokes a key for good. */
  revokeKey(id: string): Promise<Key> {
    return this.#call('DELETE', `/admin/v1/keys/${encodeURIComponent(id)}`);
  }

  /** Usage in time buckets over [start, end). */
  usage(query: UsageQuery): Promise<UsagePage> {
    const parameters = new URLSearchParams({ start: String(query.start), end: String(query.end), bucket: query.bucket });
    if (query.groupBy.length > 0) parameters.set('group_by', query.groupBy.join(','));
    if (query.keyId) parameters.set('key_id', query.keyId);
    return this.#call('GET', `/admin/v1/usage?${parameters}`);
  }

  /** The latest requests, newest first. */
  async requests(query: { limit?: number; keyId?: string } = {}): Promise<GatewayRequest[]> {
    const parameters = new URLSearchParams();
    if (query.limit !== undefined) parameters.set('limit', String(query.limit));
    if (query.keyId) parameters.set('key_id', query.keyId);
    const search = parameters.toString();
    return (await this.#call<List<GatewayRequest>>('GET', `/admin/v1/requests${search ? `?${search}` : ''}`)).data;
  }

  /** Every model with its health. */
  async models(): Promise<ModelHealth[]> {
    return (await this.#call<List<ModelHealth>>('GET', '/admin/v1/models')).data;
  }
}
