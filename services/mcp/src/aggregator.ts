/**
 * The aggregated MCP server a client of /mcp talks to: one JSON-RPC message in, one answer out,
 * with no state of its own beyond the session in Redis, so that any replica answers any message.
 * Tools and prompts of every upstream server the caller may use are listed with their names
 * namespaced by server (`<server>__<tool>`: letters, digits, "_", "-" and "." only, as MCP's tool
 * names allow); a tools/call goes to the server its name names, after the caller's allow-lists
 * (auth's decision) allowed it. Resources keep their URIs; a read goes to the server listing it.
 *
 * One piece: the aggregated server, one method per JSON-RPC method, all over the same upstream
 * pool, the caller's permissions and the call that opens a lost upstream session again
 * (withReconnect).
 */
import { randomUUID } from 'node:crypto';
import {
  CallToolRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  InitializeRequestSchema,
  JSONRPCMessageSchema,
  LATEST_PROTOCOL_VERSION,
  McpError,
  ReadResourceRequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '@gateway/logger';
import type { ClientSessions } from './client-sessions.js';
import type { ServerRegistry, UpstreamServer } from './server-registry.js';
import { namespaced, splitNamespaced, ToolPermissions } from './tool-permissions.js';
import { CredentialsUnavailableError, SIGN_IN_TOOL, SignInLinkError, SignInRequiredError } from './upstream-credentials.js';
import type { UpstreamPool } from './upstream-pool.js';

/** Who sends a message. */
export interface McpCaller {
  keyId: string;
  teamId: string;
  /** The MCP tool allow-lists that apply to the key; none: every tool. */
  toolAllowLists: string[][];
}

/** One message to answer. */
export interface McpMessage {
  caller: McpCaller;
  sessionId: string;
  protocolVersion: string;
  messageJson: string;
}

/** What a tools/call did. */
export interface ToolCallOutcome {
  server: string;
  tool: string;
  failed: boolean;
  errorCode: string;
  latencyMs: number;
}

/** The answer to one message. */
export interface McpAnswer {
  httpStatus: number;
  /** '' for an accepted notification (202). */
  messageJson: string;
  sessionId?: string;
  method?: string;
  toolCall?: ToolCallOutcome;
}

/** What the aggregator is built from. */
export interface AggregatorDependencies {
  registry: Pick<ServerRegistry, 'current'>;
  pool: UpstreamPool;
  sessions: ClientSessions;
  logger: Logger;
  /** The largest upstream answer relayed, in bytes of JSON (MCP_MAX_RESPONSE_BYTES). */
  maxResponseBytes: number;
  /** The longest an upstream request may take (MCP_TOOL_CALL_TIMEOUT_MS). */
  timeoutMs: number;
}

/** The largest message accepted, in bytes; the edge's body limit is smaller. */
const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
/** The gateway's own name and version in initialize. */
const SERVER_INFO = { name: 'llm-gateway', title: 'LLM gateway MCP', version: '0.1.0' };
/** A JSON-RPC error code of the gateway: a tool or prompt the key may not use. */
export const NOT_ALLOWED_CODE = -32003;
/**
 * A JSON-RPC error code of the gateway: the key has no credentials for an `auth: oauth` server and
 * this answer starts no sign-in (a prompt or resource of it: only a tools/call, which the key's
 * limits count, starts one and answers the link as UrlElicitationRequired, -32042), or the gateway
 * offers no per-user OAuth (MCP_OAUTH_REDIRECT_URL unset). Its message says what to do.
 */
export const AUTHORIZATION_NEEDED_CODE = -32005;

type Id = string | number | null;

/** A failure to answer with a JSON-RPC error (and, for a tools/call, its stable code). */
class RpcFailure extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly reason: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

function errorJson(id: Id, code: number, message: string, data?: unknown): string {
  return JSON.stringify({ jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } });
}

/**
 * The sign-in a key needs as the MCP error URL elicitation required (spec 2025-11-25; the SDK's
 * UrlElicitationRequiredError): the link in `data.elicitations` for a client that opens it, and in
 * the message for one that only shows the message.
 */
function signInFailure(error: SignInLinkError): RpcFailure {
  const elicitation = { mode: 'url', elicitationId: randomUUID(), url: error.url.href, message: error.message };
  return new RpcFailure(ErrorCode.UrlElicitationRequired, error.message, 'credentials_unavailable', { elicitations: [elicitation] });
}

function resultJson(id: Id, result: unknown): string {
  return JSON.stringify({ jsonrpc: '2.0', id, result });
}

/** The tool listed in place of an OAuth server's tools for a key without a token; calling it answers the sign-in link. */
function signInTool(server: string): Tool {
  return {
    name: SIGN_IN_TOOL,
    description: `Sign in to the MCP server "${server}" to use its tools: calling this answers the link to open, then list the tools again.`,
    inputSchema: { type: 'object', properties: {} },
  };
}

/** One message as JSON-RPC 2.0 (a request, notification or response), or the error answering it. */
function parseMessage(messageJson: string): { rpc: JSONRPCMessage } | { answer: McpAnswer } {
  if (Buffer.byteLength(messageJson) > MAX_MESSAGE_BYTES)
    return { answer: { httpStatus: 413, messageJson: errorJson(null, ErrorCode.InvalidRequest, 'The message is too large.') } };
  let parsed: unknown;
  try {
    parsed = JSON.parse(messageJson);
  } catch {
    return { answer: { httpStatus: 400, messageJson: errorJson(null, ErrorCode.ParseError, 'Parse error: the body is not valid JSON.') } };
  }
  if (Array.isArray(parsed))
    return {
      answer: {
        httpStatus: 400,
        messageJson: errorJson(null, ErrorCode.InvalidRequest, 'Invalid Request: JSON-RPC batches are not supported; send one message per request.'),
      },
    };
  const checked = JSONRPCMessageSchema.safeParse(parsed);
  if (!checked.success) {
    const id =
      typeof parsed === 'object' && parsed !== null && 'id' in parsed && (typeof parsed.id === 'string' || typeof parsed.id === 'number') ? parsed.id : null;
    return {
      answer: {
        httpStatus: 400,
        messageJson: errorJson(id, ErrorCode.InvalidRequest, 'Invalid Request: the body is not a JSON-RPC 2.0 request, notification or response.'),
      },
    };
  }
  return { rpc: checked.data };
}

/** The aggregated server. */
export class Aggregator {
  constructor(private readonly deps: AggregatorDependencies) {}

  /** Answers one message; never throws for anything a client sent (a store failure rejects). */
  async handle(message: McpMessage): Promise<McpAnswer> {
    const parsed = parseMessage(message.messageJson);
    if ('answer' in parsed) return parsed.answer;
    const { rpc } = parsed;
    const method = 'method' in rpc ? rpc.method : '';
    if (method === 'initialize' && 'id' in rpc) return { ...(await this.initialize(rpc as JSONRPCRequest, message.caller)), method };
    if (message.protocolVersion && !SUPPORTED_PROTOCOL_VERSIONS.includes(message.protocolVersion))
      return {
        httpStatus: 400,
        method,
        messageJson: errorJson(
          'id' in rpc ? (rpc.id as Id) : null,
          ErrorCode.InvalidRequest,
          `Bad Request: unsupported MCP-Protocol-Version ${message.protocolVersion.slice(0, 40)} (supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}).`,
        ),
      };
    if (!message.sessionId)
      return {
        httpStatus: 400,
        method,
        messageJson: errorJson('id' in rpc ? (rpc.id as Id) : null, -32000, 'Bad Request: Mcp-Session-Id header is required.'),
      };
    const session = await this.deps.sessions.find(message.sessionId, message.caller.keyId);
    if (!session) return { httpStatus: 404, method, messageJson: errorJson('id' in rpc ? (rpc.id as Id) : null, -32001, 'Session not found.') };
    // Notifications and responses from the client: accepted, nothing to answer.
    if (!('method' in rpc) || !('id' in rpc)) return { httpStatus: 202, messageJson: '', method };
    const request = rpc as JSONRPCRequest;
    const permissions = new ToolPermissions(message.caller.toolAllowLists);
    const outcome: { toolCall?: ToolCallOutcome } = {};
    try {
      const result = await this.dispatch(request, message.caller, permissions, outcome);
      const json = resultJson(request.id, result);
      if (Buffer.byteLength(json) > this.deps.maxResponseBytes) {
        if (outcome.toolCall) Object.assign(outcome.toolCall, { failed: true, errorCode: 'response_too_large' });
        return {
          httpStatus: 200,
          method,
          toolCall: outcome.toolCall,
          messageJson: errorJson(
            request.id,
            ErrorCode.InternalError,
            `The upstream answer is larger than this gateway relays (${this.deps.maxResponseBytes} bytes).`,
          ),
        };
      }
      return { httpStatus: 200, method, messageJson: json, toolCall: outcome.toolCall };
    } catch (error) {
      const failure = this.failure(error);
      if (outcome.toolCall) Object.assign(outcome.toolCall, { failed: true, errorCode: failure.reason });
      return { httpStatus: 200, method, toolCall: outcome.toolCall, messageJson: errorJson(request.id, failure.code, failure.message, failure.data) };
    }
  }

  /** A thrown error as the JSON-RPC error to answer. */
  private failure(error: unknown): RpcFailure {
    if (error instanceof RpcFailure) return error;
    if (error instanceof SignInLinkError) return signInFailure(error);
    if (error instanceof CredentialsUnavailableError) return new RpcFailure(AUTHORIZATION_NEEDED_CODE, error.message, 'credentials_unavailable');
    if (error instanceof McpError) {
      if (error.code === ErrorCode.RequestTimeout) return new RpcFailure(ErrorCode.RequestTimeout, 'The MCP server did not answer in time.', 'timeout');
      // The upstream's own JSON-RPC error: the client sees what the server said.
      return new RpcFailure(error.code, error.message.replace(/^MCP error -?\d+: /, ''), 'upstream_error');
    }
    this.deps.logger.warn({ err: error instanceof Error ? error.message : String(error) }, 'MCP upstream request failed');
    return new RpcFailure(ErrorCode.InternalError, 'The MCP server could not be reached.', 'upstream_error');
  }

  private async initialize(request: JSONRPCRequest, caller: McpCaller): Promise<McpAnswer> {
    const checked = InitializeRequestSchema.safeParse(request);
    if (!checked.success)
      return {
        httpStatus: 200,
        messageJson: errorJson(request.id, ErrorCode.InvalidParams, 'Invalid params: initialize needs protocolVersion, capabilities and clientInfo.'),
      };
    const asked = checked.data.params.protocolVersion;
    const protocolVersion = SUPPORTED_PROTOCOL_VERSIONS.includes(asked) ? asked : LATEST_PROTOCOL_VERSION;
    const sessionId = await this.deps.sessions.open(caller.keyId, protocolVersion);
    const result = {
      protocolVersion,
      capabilities: { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true } },
      serverInfo: SERVER_INFO,
      instructions: 'Tools of the MCP servers this gateway serves, each named <server>__<tool>.',
    };
    return { httpStatus: 200, messageJson: resultJson(request.id, result), sessionId };
  }

  /** The servers the caller may use something of. */
  private visibleServers(permissions: ToolPermissions): UpstreamServer[] {
    return [...this.deps.registry.current.values()].filter((server) => permissions.allowsAnyOf(server.name));
  }

  /** Each visible server's list, leaving out (and logging) a server that fails to answer. */
  private async gather<T>(
    servers: UpstreamServer[],
    read: (server: UpstreamServer) => Promise<T[]>,
  ): Promise<{ server: UpstreamServer; items: T[]; signIn?: boolean }[]> {
    return Promise.all(
      servers.map(async (server) => {
        try {
          return { server, items: await read(server) };
        } catch (error) {
          if (error instanceof SignInRequiredError) return { server, items: [], signIn: true };
          // A server needing per-user credentials the key lacks is left out quietly: that is expected.
          if (!(error instanceof CredentialsUnavailableError))
            this.deps.logger.warn({ server: server.name, err: error instanceof Error ? error.message : String(error) }, 'an MCP server could not be listed');
          return { server, items: [] };
        }
      }),
    );
  }

  private server(name: string): UpstreamServer | undefined {
    return this.deps.registry.current.get(name);
  }

  private async dispatch(request: JSONRPCRequest, caller: McpCaller, permissions: ToolPermissions, outcome: { toolCall?: ToolCallOutcome }): Promise<unknown> {
    const keyId = caller.keyId;
    const pool = this.deps.pool;
    switch (request.method) {
      case 'ping':
        return {};
      case 'tools/list': {
        const lists = await this.gather(this.visibleServers(permissions), (server) => pool.list(server, keyId, 'tools'));
        const tools = lists.flatMap(({ server, items, signIn }) =>
          (signIn ? [signInTool(server.name)] : items)
            .map((tool) => ({ ...tool, name: namespaced(server.name, tool.name) }))
            .filter((tool) => permissions.allows(tool.name)),
        );
        return { tools };
      }
      case 'tools/call':
        return this.callTool(request, keyId, permissions, outcome);
      case 'prompts/list': {
        const lists = await this.gather(this.visibleServers(permissions), (server) => pool.list(server, keyId, 'prompts'));
        const prompts = lists.flatMap(({ server, items }) =>
          items.map((prompt) => ({ ...prompt, name: namespaced(server.name, prompt.name) })).filter((prompt) => permissions.allows(prompt.name)),
        );
        return { prompts };
      }
      case 'prompts/get':
        return this.getPrompt(request, keyId, permissions);
      case 'resources/list': {
        const lists = await this.gather(this.visibleServers(permissions), (server) => pool.list(server, keyId, 'resources'));
        return { resources: lists.flatMap(({ items }) => items) };
      }
      case 'resources/templates/list': {
        const lists = await this.gather(this.visibleServers(permissions), (server) => pool.list(server, keyId, 'templates'));
        return { resourceTemplates: lists.flatMap(({ items }) => items) };
      }
      case 'resources/read':
        return this.readResource(request, keyId, permissions);
      default:
        throw new RpcFailure(ErrorCode.MethodNotFound, `Method not found: ${request.method.slice(0, 100)}`, 'method_not_found');
    }
  }

  /** tools/call: the namespaced tool on its server, if the key may use it; the outcome records how it ended and how long it took. */
  private async callTool(request: JSONRPCRequest, keyId: string, permissions: ToolPermissions, outcome: { toolCall?: ToolCallOutcome }): Promise<unknown> {
    const pool = this.deps.pool;
    const options = { timeout: this.deps.timeoutMs };
    const checked = CallToolRequestSchema.safeParse(request);
    if (!checked.success)
      throw new RpcFailure(ErrorCode.InvalidParams, 'Invalid params: tools/call needs a tool name and an arguments object.', 'invalid_params');
    const name = checked.data.params.name;
    const target = splitNamespaced(name);
    const server = target && this.server(target.server);
    outcome.toolCall = { server: server ? server.name : '', tool: target && server ? target.name : '', failed: false, errorCode: '', latencyMs: 0 };
    if (!target || !server) throw new RpcFailure(ErrorCode.InvalidParams, `Unknown tool: ${name.slice(0, 200)}`, 'unknown_tool');
    if (!permissions.allows(name))
      throw new RpcFailure(NOT_ALLOWED_CODE, `This API key is not allowed to use the tool \`${name.slice(0, 200)}\`.`, 'tool_not_allowed');
    const started = performance.now();
    try {
      const result = await this.withReconnect(server, keyId, (client) =>
        client.callTool({ name: target.name, arguments: checked.data.params.arguments ?? {} }, undefined, {
          ...options,
          maxTotalTimeout: this.deps.timeoutMs,
        }),
      ).catch((error: unknown) => {
        // A key without a token: this counted call starts its sign-in, and the error carries the link.
        if (error instanceof SignInRequiredError) return pool.signIn(server, keyId);
        throw error;
      });
      if (result.isError === true) Object.assign(outcome.toolCall, { failed: true, errorCode: 'tool_error' });
      return result;
    } finally {
      outcome.toolCall.latencyMs = Math.round(performance.now() - started);
    }
  }

  /** prompts/get: the namespaced prompt on its server, if the key may use it. */
  private async getPrompt(request: JSONRPCRequest, keyId: string, permissions: ToolPermissions): Promise<unknown> {
    const options = { timeout: this.deps.timeoutMs };
    const checked = GetPromptRequestSchema.safeParse(request);
    if (!checked.success) throw new RpcFailure(ErrorCode.InvalidParams, 'Invalid params: prompts/get needs a prompt name.', 'invalid_params');
    const name = checked.data.params.name;
    const target = splitNamespaced(name);
    const server = target && this.server(target.server);
    if (!target || !server) throw new RpcFailure(ErrorCode.InvalidParams, `Unknown prompt: ${name.slice(0, 200)}`, 'unknown_prompt');
    if (!permissions.allows(name))
      throw new RpcFailure(NOT_ALLOWED_CODE, `This API key is not allowed to use the prompt \`${name.slice(0, 200)}\`.`, 'not_allowed');
    return this.withReconnect(server, keyId, (client) => client.getPrompt({ name: target.name, arguments: checked.data.params.arguments }, options));
  }

  /** resources/read: from the visible server listing the URI, else the first whose templates can read it. */
  private async readResource(request: JSONRPCRequest, keyId: string, permissions: ToolPermissions): Promise<unknown> {
    const pool = this.deps.pool;
    const options = { timeout: this.deps.timeoutMs };
    const checked = ReadResourceRequestSchema.safeParse(request);
    if (!checked.success) throw new RpcFailure(ErrorCode.InvalidParams, 'Invalid params: resources/read needs a uri.', 'invalid_params');
    const uri = checked.data.params.uri;
    const servers = this.visibleServers(permissions);
    const lists = await this.gather(servers, (server) => pool.list(server, keyId, 'resources'));
    const owner = lists.find(({ items }) => items.some((resource) => resource.uri === uri))?.server;
    if (owner) return this.withReconnect(owner, keyId, (client) => client.readResource({ uri }, options));
    // A URI of a template: the first server with templates that can read it.
    const templated = await this.gather(servers, (server) => pool.list(server, keyId, 'templates'));
    for (const { server, items } of templated) {
      if (items.length === 0) continue;
      try {
        return await this.withReconnect(server, keyId, (client) => client.readResource({ uri }, options));
      } catch {
        // Not this server's: try the next one.
      }
    }
    throw new RpcFailure(-32002, `Resource not found: ${uri.slice(0, 200)}`, 'unknown_resource');
  }

  /**
   * Runs a request on a server's session; when the session itself is gone (the server restarted
   * and forgot it: HTTP 404, or the connection broke before anything was sent), opens a new one and
   * tries once more. A JSON-RPC error of the server is its answer, never retried.
   */
  private async withReconnect<T>(server: UpstreamServer, keyId: string, run: (client: Awaited<ReturnType<UpstreamPool['client']>>) => Promise<T>): Promise<T> {
    const client = await this.deps.pool.client(server, keyId);
    try {
      return await run(client);
    } catch (error) {
      if (error instanceof McpError || error instanceof CredentialsUnavailableError) throw error;
      const gone = (error as { code?: unknown }).code === 404;
      this.deps.pool.discard(server, keyId);
      if (!gone) throw error;
      return run(await this.deps.pool.client(server, keyId));
    }
  }
}
