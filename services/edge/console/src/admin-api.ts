/**
 * The admin API as the console uses it: every call on this origin, with the admin token as a
 * bearer token, and every failure as an {@link ApiError} carrying the OpenAI error envelope's
 * fields. A 401 or 403 also reports itself to the console, which forgets the token and returns
 * to the login form.
 *
 * One piece: the console's one client of the admin API, every resource a member of AdminApi over
 * one call function, so that every page's call carries the token and fails the same way.
 */

import { PLAN_NAMES } from '@gateway/proto/plans';
import type {
  AdminToken,
  AdminTokenCreation,
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
  PolicyJson,
  PolicyPut,
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
  deployment: string;
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
    ['deployment', 'deployment'],
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

/** How a collection calls the admin API: a method, a path, and a JSON body when there is one. */
type Call = <T>(method: string, path: string, body?: unknown) => Promise<T>;

/**
 * One collection of the admin API, `/admin/v1/<name>`: its list, and each item by its id (an MCP
 * server by its name). A collection offers only the writes its types allow: `never` for none.
 */
export class Collection<Item, Creation = never, Change = never, Created = Item, Replacement = never> {
  readonly #call: Call;
  readonly #path: string;

  constructor(call: Call, name: string) {
    this.#call = call;
    this.#path = `/admin/v1/${name}`;
  }

  #item(id: string): string {
    return `${this.#path}/${encodeURIComponent(id)}`;
  }

  /** Every item, revoked ones included. */
  async list(): Promise<Item[]> {
    return (await this.#call<List<Item>>('GET', this.#path)).data;
  }

  /** Creates an item; a key's or token's answer carries its secret, which is never shown again. */
  create(creation: Creation): Promise<Created> {
    return this.#call('POST', this.#path, creation);
  }

  /** Changes what `change` names of an item. */
  update(id: string, change: Change): Promise<Item> {
    return this.#call('PATCH', this.#item(id), change);
  }

  /** Declares or replaces an item; an MCP server's headers left out keep the stored ones. */
  replace(id: string, replacement: Replacement): Promise<Item> {
    return this.#call('PUT', this.#item(id), replacement);
  }

  /** Revokes a key or token for good, deletes a team without live keys, removes an MCP server. */
  remove(id: string): Promise<unknown> {
    return this.#call('DELETE', this.#item(id));
  }
}

/** `path` with the query of `parameters` that are set (neither undefined nor empty). */
function withQuery(path: string, parameters: Record<string, string | number | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(parameters)) if (value !== undefined && value !== '') query.set(name, String(value));
  const search = query.toString();
  return search ? `${path}?${search}` : path;
}

/** The admin API with one token. */
export class AdminApi {
  readonly #token: string;
  readonly #onTokenRefused: (error: ApiError) => void;
  readonly #bound: Call = (method, path, body) => this.#call(method, path, body);

  /** API keys. */
  readonly keys = new Collection<Key, KeyCreation, KeyChange, CreatedKey>(this.#bound, 'keys');
  /** Teams; one with live keys is not deleted. */
  readonly teams = new Collection<Team, TeamCreation, TeamChange>(this.#bound, 'teams');
  /** The upstream MCP servers of /mcp (a 404 when the gateway has no MCP service). */
  readonly mcpServers = new Collection<McpServer, never, never, McpServer, McpServerPut>(this.#bound, 'mcp-servers');
  /** Guardrail policies, kept by the guard service (a 404 when the gateway has none). */
  readonly policies = new Collection<PolicyJson, never, never, PolicyJson, PolicyPut>(this.#bound, 'policies');
  /** Admin tokens (role admin only). */
  readonly adminTokens = new Collection<AdminToken, AdminTokenCreation, never, CreatedAdminToken>(this.#bound, 'admin-tokens');
  /** Every model with its health. */
  readonly models = new Collection<ModelHealth>(this.#bound, 'models');

  /** `onTokenRefused` is told of every 401 and 403 before the call's promise rejects with it. */
  constructor(token: string, onTokenRefused: (error: ApiError) => void) {
    this.#token = token;
    this.#onTokenRefused = onTokenRefused;
  }

  /** A response of the gateway with the token; a failure, or a response that is not ok, throws its {@link ApiError}. */
  async #fetch(path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Response> {
    let response: Response;
    try {
      // `credentials: 'omit'`: the token is the only credential; no cookie ever goes along.
      response = await fetch(path, { ...init, headers: { ...init.headers, authorization: `Bearer ${this.#token}` }, credentials: 'omit', cache: 'no-store' });
    } catch (error) {
      throw new ApiError(0, `Could not reach the gateway: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (!response.ok) {
      const error = await errorOf(response);
      if (error.refusesToken) this.#onTokenRefused(error);
      throw error;
    }
    return response;
  }

  async #call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await this.#fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return (await response.json()) as T;
  }

  /** Usage in time buckets over [start, end). */
  usage(query: UsageQuery): Promise<UsagePage> {
    const groupBy = query.groupBy.join(',');
    return this.#call(
      'GET',
      withQuery('/admin/v1/usage', { start: query.start, end: query.end, bucket: query.bucket, group_by: groupBy, key_id: query.keyId }),
    );
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
    const response = await this.#fetch(`/admin/v1/requests?${parameters}`);
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

  /** A page of the audit trail, newest first; `cursor` is the previous page's next_cursor. */
  audit(query: { cursor?: string; targetId?: string; actor?: string; limit?: number } = {}): Promise<AuditPage> {
    return this.#call('GET', withQuery('/admin/v1/audit', { limit: query.limit, cursor: query.cursor, target_id: query.targetId, actor: query.actor }));
  }
}
