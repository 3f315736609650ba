/**
 * The admin API as the console uses it: every call on this origin, with the admin token as a
 * bearer token, and every failure as an {@link ApiError} carrying the OpenAI error envelope's
 * fields. A 401 or 403 also reports itself to the console, which forgets the token and returns
 * to the login form.
 */

import { PLAN_NAMES } from '@gateway/proto/plans';
import type {
  AdminToken,
  AuditPage,
  BucketWidth,
  CreatedAdminToken,
  CreatedKey,
  GatewayRequest,
  Key,
  KeyChange,
  KeyCreation,
  List,
  LoggedRequest,
  LoggedRequestDetail,
  McpServer,
  McpServerPut,
  ModelHealth,
  Plan,
  Principal,
  Team,
  TeamChange,
  TeamCreation,
  UsagePage,
} from '../../src/routes/admin/admin-api-schemas';

// The admin API's types, declared once beside the routes (their TypeBox schemas' static types):
// the console imports types only, so no schema code is bundled.
export type * from '../../src/routes/admin/admin-api-schemas';

/** The plans, in the order the forms offer them. */
export const PLANS: readonly Plan[] = PLAN_NAMES;

/** The query of GET /admin/v1/usage. */
/** A search of the request log (GET /admin/v1/requests); empty fields do not filter. */
export interface RequestSearch {
  /** How far back, in seconds (0: the log's whole retention). */
  sinceSeconds: number;
  keyId: string;
  teamId: string;
  model: string;
  provider: string;
  status: string;
  errorCode: string;
  api: string;
  outcome: string;
  minLatencyMs: string;
  maxLatencyMs: string;
  minCostUsd: string;
  maxCostUsd: string;
  sort: 'time' | 'latency' | 'cost';
  order: 'desc' | 'asc';
}

/** A page of requests: from the request log (with its cursor), or the latest requests metering keeps (no log). */
export interface RequestsPage {
  data: LoggedRequest[] | GatewayRequest[];
  /** Whether the request log answered: searches, details and exports work. */
  log: boolean;
  nextCursor: string | null;
}

/** A search's query string, without its page and format. */
export function requestSearchParameters(search: RequestSearch): URLSearchParams {
  const parameters = new URLSearchParams();
  if (search.sinceSeconds > 0) parameters.set('start', String(Math.floor(Date.now() / 1000) - search.sinceSeconds));
  const text: Array<[keyof RequestSearch, string]> = [
    ['keyId', 'key_id'],
    ['teamId', 'team_id'],
    ['model', 'model'],
    ['provider', 'provider'],
    ['status', 'status'],
    ['errorCode', 'error_code'],
    ['api', 'api'],
    ['outcome', 'outcome'],
    ['minLatencyMs', 'min_latency_ms'],
    ['maxLatencyMs', 'max_latency_ms'],
    ['minCostUsd', 'min_cost_usd'],
    ['maxCostUsd', 'max_cost_usd'],
  ];
  for (const [field, name] of text) {
    const value = String(search[field]).trim();
    if (value) parameters.set(name, value);
  }
  if (search.sort !== 'time') parameters.set('sort', search.sort);
  if (search.order !== 'desc') parameters.set('order', search.order);
  return parameters;
}

export interface UsageQuery {
  start: number;
  end: number;
  bucket: BucketWidth;
  groupBy: ReadonlyArray<'key' | 'model' | 'plan' | 'team'>;
  keyId?: string;
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

  /**
   * Whether the token itself was refused: the console must ask for it again. A 403 for the role
   * (`admin_role_required`: a viewer's change) refuses the action, not the token.
   */
  get refusesToken(): boolean {
    return this.status === 401 || (this.status === 403 && this.code !== 'admin_role_required');
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

/** Who the token belongs to: GET /admin/v1/me. */
export type AdminSession = Principal;

/** Whether the edge offers single sign-on (GET /console/sso/config, no credential); false when it cannot be asked. */
export async function ssoOffered(): Promise<boolean> {
  try {
    const response = await fetch('/console/sso/config', { credentials: 'omit', cache: 'no-store' });
    return response.ok && ((await response.json()) as { enabled?: unknown }).enabled === true;
  } catch {
    return false;
  }
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

  /** Every team. */
  async listTeams(): Promise<Team[]> {
    return (await this.#call<List<Team>>('GET', '/admin/v1/teams')).data;
  }

  /** Creates a team. */
  createTeam(creation: TeamCreation): Promise<Team> {
    return this.#call('POST', '/admin/v1/teams', creation);
  }

  /** Changes a team's name, limits, budgets or allowed models. */
  updateTeam(id: string, change: TeamChange): Promise<Team> {
    return this.#call('PATCH', `/admin/v1/teams/${encodeURIComponent(id)}`, change);
  }

  /** Deletes a team without live keys. */
  deleteTeam(id: string): Promise<unknown> {
    return this.#call('DELETE', `/admin/v1/teams/${encodeURIComponent(id)}`);
  }

  /** Every upstream MCP server of /mcp (a 404 when the gateway has no MCP service). */
  async listMcpServers(): Promise<McpServer[]> {
    return (await this.#call<List<McpServer>>('GET', '/admin/v1/mcp-servers')).data;
  }

  /** Declares or replaces an upstream MCP server; headers left out keep the stored ones. */
  putMcpServer(name: string, server: McpServerPut): Promise<McpServer> {
    return this.#call('PUT', `/admin/v1/mcp-servers/${encodeURIComponent(name)}`, server);
  }

  /** Removes an upstream MCP server. */
  deleteMcpServer(name: string): Promise<unknown> {
    return this.#call('DELETE', `/admin/v1/mcp-servers/${encodeURIComponent(name)}`);
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

  /**
   * A page of requests. The first page of a plain query (a key at most) is what every gateway
   * answers: the request log's answer carries `has_more`, which tells the console the log is there;
   * a search with the log's own filters is sent only once it is.
   */
  async requestsPage(search: RequestSearch, options: { log: boolean; limit: number; cursor?: string }): Promise<RequestsPage> {
    const parameters = options.log ? requestSearchParameters(search) : new URLSearchParams(search.keyId ? { key_id: search.keyId } : {});
    parameters.set('limit', String(options.limit));
    if (options.log && options.cursor) parameters.set('cursor', options.cursor);
    const page = await this.#call<List<LoggedRequest> & { has_more?: boolean; next_cursor?: string | null }>('GET', `/admin/v1/requests?${parameters}`);
    return { data: page.data, log: page.has_more !== undefined, nextCursor: page.next_cursor ?? null };
  }

  /** One request of the request log, by its id or request id, with its bodies when kept and the caller may see them. */
  request(id: string): Promise<LoggedRequestDetail> {
    return this.#call('GET', `/admin/v1/requests/${encodeURIComponent(id)}`);
  }

  /** Every request a search finds, as a CSV or JSONL file, downloaded by the browser (the token goes as a header, never in a link). */
  async downloadRequests(search: RequestSearch, format: 'csv' | 'jsonl'): Promise<void> {
    const parameters = requestSearchParameters(search);
    parameters.set('format', format);
    let response: Response;
    try {
      response = await fetch(`/admin/v1/requests?${parameters}`, {
        headers: { authorization: `Bearer ${this.#token}` },
        credentials: 'omit',
        cache: 'no-store',
      });
    } catch (error) {
      throw new ApiError(0, `Could not reach the gateway: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (!response.ok) {
      const error = await errorOf(response);
      if (error.refusesToken) this.#onTokenRefused(error);
      throw error;
    }
    const disposition = response.headers.get('content-disposition') ?? '';
    const name = /filename="([^"]+)"/.exec(disposition)?.[1] ?? `requests.${format}`;
    const url = URL.createObjectURL(await response.blob());
    const link = document.createElement('a');
    link.href = url;
    link.download = name;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
  }

  /** Who the token belongs to: its subject, role and where it came from. */
  session(): Promise<AdminSession> {
    return this.#call('GET', '/admin/v1/me');
  }

  /** Every admin token, revoked ones included (role admin only). */
  async listAdminTokens(): Promise<AdminToken[]> {
    return (await this.#call<List<AdminToken>>('GET', '/admin/v1/admin-tokens')).data;
  }

  /** Creates an admin token; the answer carries its secret, which is never shown again. */
  createAdminToken(creation: { role: 'admin' | 'viewer'; name?: string }): Promise<CreatedAdminToken> {
    return this.#call('POST', '/admin/v1/admin-tokens', creation);
  }

  /** Revokes an admin token for good. */
  revokeAdminToken(id: string): Promise<AdminToken> {
    return this.#call('DELETE', `/admin/v1/admin-tokens/${encodeURIComponent(id)}`);
  }

  /** A page of the audit trail, newest first; `cursor` is the previous page's next_cursor. */
  audit(query: { cursor?: string; targetId?: string; actor?: string; limit?: number } = {}): Promise<AuditPage> {
    const parameters = new URLSearchParams();
    if (query.limit !== undefined) parameters.set('limit', String(query.limit));
    if (query.cursor) parameters.set('cursor', query.cursor);
    if (query.targetId) parameters.set('target_id', query.targetId);
    if (query.actor) parameters.set('actor', query.actor);
    const search = parameters.toString();
    return this.#call('GET', `/admin/v1/audit${search ? `?${search}` : ''}`);
  }

  /** Every model with its health. */
  async models(): Promise<ModelHealth[]> {
    return (await this.#call<List<ModelHealth>>('GET', '/admin/v1/models')).data;
  }
}
