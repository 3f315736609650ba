/**
 * The gateway's client sessions to upstream MCP servers, made with the official MCP SDK's Client
 * over its Streamable HTTP or HTTP+SSE transport. One session per server is shared by every caller
 * (its static headers are the server's, not a caller's); a server declared with `auth: oauth` gets
 * one session per key, with the headers UpstreamCredentials gives for that key. A session is
 * opened on first use, its lists (tools, prompts, resources) are cached until the server says they
 * changed (the `list_changed` notifications, passed on to the listeners), and it is closed when the
 * server is changed or removed, or fails (the next use opens a new one).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
  type Prompt,
  type Resource,
  type ResourceTemplate,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '@gateway/logger';
import type { UpstreamServer } from './server-registry.js';
import { authorizationNeeded, oauthHeaders, SignInRequiredError, type UpstreamCredentials, type UpstreamOAuthServer } from './upstream-credentials.js';

/** Which list of a server changed. */
export type ListKind = 'tools' | 'prompts' | 'resources';

/** The version the gateway reports to upstream servers. */
const CLIENT_INFO = { name: 'llm-gateway', version: '0.1.0' };
/** The most pages of one list read from a server (a hostile server could page forever). */
const MAX_PAGES = 50;
/**
 * The longest opening a session or reading a list may take (ms), shorter than a tool call's: a
 * server that does not answer must not hold every client's tools/list for a minute.
 */
const LIST_TIMEOUT_MS = 10_000;

/** What each list a session caches holds. */
interface Listed {
  tools: Tool;
  prompts: Prompt;
  resources: Resource;
  templates: ResourceTemplate;
}

/**
 * How each list is read: the capability a server declares it under, the Client method that reads
 * one page of it, and the field of the page that holds its items.
 */
const LISTS = {
  tools: { capability: 'tools', method: 'listTools', items: 'tools' },
  prompts: { capability: 'prompts', method: 'listPrompts', items: 'prompts' },
  resources: { capability: 'resources', method: 'listResources', items: 'resources' },
  // Resource templates come with the resources capability.
  templates: { capability: 'resources', method: 'listResourceTemplates', items: 'resourceTemplates' },
} as const satisfies Record<keyof Listed, { capability: ListKind; method: keyof Client; items: string }>;

interface Session {
  server: UpstreamServer;
  client: Promise<Client>;
  tools?: Promise<Tool[]>;
  prompts?: Promise<Prompt[]>;
  resources?: Promise<Resource[]>;
  templates?: Promise<ResourceTemplate[]>;
}

/** An `auth: oauth` server as the credentials see it. */
function oauthServerOf(server: UpstreamServer): UpstreamOAuthServer {
  return {
    id: server.name,
    url: server.url,
    ...(server.oauth?.clientId && { clientId: server.oauth.clientId }),
    ...(server.oauth?.clientSecret && { clientSecret: server.oauth.clientSecret }),
    ...(server.oauth?.scopes.length && { scopes: server.oauth.scopes }),
  };
}

/** Options of a pool. */
export interface UpstreamPoolOptions {
  credentials: UpstreamCredentials;
  logger: Logger;
  /** The longest a request to a server may take (MCP_TOOL_CALL_TIMEOUT_MS). */
  timeoutMs: number;
}

/** The client sessions to every upstream server. */
export class UpstreamPool {
  private readonly sessions = new Map<string, Session>();
  private readonly listeners: ((server: string, kind: ListKind) => void)[] = [];

  constructor(private readonly options: UpstreamPoolOptions) {}

  /** Calls `listener` whenever a server's list changed (a notification, or the server itself changed). */
  onListChanged(listener: (server: string, kind: ListKind) => void): void {
    this.listeners.push(listener);
  }

  private changed(server: string, kind: ListKind): void {
    for (const listener of this.listeners) listener(server, kind);
  }

  /** Closes the sessions of servers that changed or went away; tells the listeners every list may have changed. */
  sync(servers: ReadonlyMap<string, UpstreamServer>): void {
    for (const [id, session] of this.sessions) {
      const now = servers.get(session.server.name);
      if (now && now.updated_at_ms === session.server.updated_at_ms) continue;
      this.close(id);
    }
    for (const kind of ['tools', 'prompts', 'resources'] as const) this.changed('*', kind);
  }

  private close(id: string): void {
    const session = this.sessions.get(id);
    if (!session) return;
    this.sessions.delete(id);
    session.client.then((client) => client.close()).catch(() => undefined);
  }

  /** The session of a server for a key (the key matters only for `auth: oauth`). */
  private session(server: UpstreamServer, keyId: string): Session {
    const id = server.auth === 'oauth' ? `${server.name}\u0000${keyId}` : server.name;
    const existing = this.sessions.get(id);
    if (existing && existing.server.updated_at_ms === server.updated_at_ms) return existing;
    if (existing) this.close(id);
    const session: Session = { server, client: this.connect(id, server, keyId) };
    this.sessions.set(id, session);
    // A failed connection is forgotten, so that the next use tries again.
    session.client.catch(() => {
      if (this.sessions.get(id) === session) this.sessions.delete(id);
    });
    return session;
  }

  private async connect(id: string, server: UpstreamServer, keyId: string): Promise<Client> {
    const oauth = server.auth === 'oauth' ? oauthServerOf(server) : undefined;
    // No session without credentials: the key's user is told how to get them (SignInRequiredError).
    if (oauth) await oauthHeaders(this.options.credentials, keyId, oauth);
    // Every request of the transport (POST, GET stream, DELETE) carries the server's headers, and
    // the key's current token for an OAuth server (asked each time: a refreshed one is used at once).
    const credentials = this.options.credentials;
    const send = (url: string | URL, init: RequestInit | undefined, headers: Record<string, string>) => {
      const merged = new Headers(init?.headers);
      for (const [name, value] of Object.entries({ ...server.headers, ...headers })) merged.set(name, value);
      return fetch(url, { ...init, headers: merged });
    };
    const withHeaders = async (url: string | URL, init?: RequestInit) => {
      if (!oauth) return send(url, init, {});
      const headers = await oauthHeaders(credentials, keyId, oauth);
      const response = await send(url, init, headers);
      // A token the server rejects before its expiry (revoked there, rotated elsewhere) is
      // refreshed once and the request sent again; with no replacement, the user authorizes again.
      // The transport's bodies are strings, so the request can be sent twice.
      if (response.status !== 401 || !credentials.headersAfterRejection) return response;
      await response.body?.cancel();
      const replacement = await credentials.headersAfterRejection(keyId, oauth, headers);
      if (replacement) return send(url, init, replacement);
      if (credentials.authorizationUrl) throw new SignInRequiredError(server.name);
      return authorizationNeeded(credentials, keyId, oauth);
    };
    const url = new URL(server.url);
    const transport: Transport =
      server.transport === 'sse' ? new SSEClientTransport(url, { fetch: withHeaders }) : new StreamableHTTPClientTransport(url, { fetch: withHeaders });
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    const forget = (kind: ListKind) => () => {
      const session = this.sessions.get(id);
      if (session) {
        if (kind === 'tools') session.tools = undefined;
        if (kind === 'prompts') session.prompts = undefined;
        if (kind === 'resources') {
          session.resources = undefined;
          session.templates = undefined;
        }
      }
      this.changed(server.name, kind);
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => forget('tools')());
    client.setNotificationHandler(PromptListChangedNotificationSchema, async () => forget('prompts')());
    client.setNotificationHandler(ResourceListChangedNotificationSchema, async () => forget('resources')());
    client.onclose = () => {
      if (this.sessions.get(id)?.server === server) this.sessions.delete(id);
    };
    client.onerror = (error) => this.options.logger.debug({ server: server.name, err: error.message }, 'MCP upstream transport error');
    await client.connect(transport, { timeout: Math.min(this.options.timeoutMs, LIST_TIMEOUT_MS) });
    this.options.logger.info({ server: server.name, transport: server.transport }, 'MCP upstream session opened');
    return client;
  }

  /** The client of a server's session for a key; a failed request closes it, so that the next use reconnects. */
  async client(server: UpstreamServer, keyId: string): Promise<Client> {
    return this.session(server, keyId).client;
  }

  /**
   * Throws the CredentialsUnavailableError carrying the link where the key's user authorizes the
   * gateway at an `auth: oauth` server (each call starts a flow: call it from a counted path).
   */
  async signIn(server: UpstreamServer, keyId: string): Promise<never> {
    return authorizationNeeded(this.options.credentials, keyId, oauthServerOf(server));
  }

  /** Closes a key's session to an `auth: oauth` server (its token was granted or revoked). */
  forget(serverName: string, keyId: string): void {
    this.close(`${serverName}\u0000${keyId}`);
  }

  /** Closes the session a request failed on (its transport may be broken). */
  discard(server: UpstreamServer, keyId: string): void {
    this.close(server.auth === 'oauth' ? `${server.name}\u0000${keyId}` : server.name);
  }

  private async cached<T>(
    server: UpstreamServer,
    keyId: string,
    field: 'tools' | 'prompts' | 'resources' | 'templates',
    read: (client: Client) => Promise<T[]>,
  ): Promise<T[]> {
    const session = this.session(server, keyId);
    const existing = session[field] as Promise<T[]> | undefined;
    if (existing) return existing;
    const list = session.client.then(read);
    (session as unknown as Record<string, Promise<T[]> | undefined>)[field] = list;
    list.catch(() => {
      if ((session as unknown as Record<string, unknown>)[field] === list) (session as unknown as Record<string, unknown>)[field] = undefined;
    });
    return list;
  }

  private async pages<T>(read: (cursor: string | undefined) => Promise<{ items: T[]; nextCursor?: string }>): Promise<T[]> {
    const all: T[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page += 1) {
      const { items, nextCursor } = await read(cursor);
      all.push(...items);
      if (!nextCursor) break;
      cursor = nextCursor;
    }
    return all;
  }

  private get requestOptions() {
    return { timeout: Math.min(this.options.timeoutMs, LIST_TIMEOUT_MS) };
  }

  /** A list of a server (cached until it says that list changed; the templates, until its resources changed). */
  list<Kind extends keyof Listed>(server: UpstreamServer, keyId: string, kind: Kind): Promise<Listed[Kind][]> {
    const { capability, method, items } = LISTS[kind];
    return this.cached(server, keyId, kind, (client) =>
      client.getServerCapabilities()?.[capability]
        ? this.pages(async (cursor) => {
            const page: { nextCursor?: string } = await client[method](cursor ? { cursor } : {}, this.requestOptions);
            return { items: (page as Record<typeof items, Listed[Kind][]>)[items], nextCursor: page.nextCursor };
          })
        : Promise.resolve([]),
    );
  }

  /** Closes every session. */
  async closeAll(): Promise<void> {
    const clients = [...this.sessions.values()].map((session) => session.client);
    this.sessions.clear();
    await Promise.all(clients.map((client) => client.then((value) => value.close()).catch(() => undefined)));
  }
}
