/**
 * The McpService handlers: Handle answers one JSON-RPC message through the Aggregator, Listen
 * streams a session's list_changed notifications (listen-streams.ts), EndSession ends a session, and the server CRUD
 * (what the edge's /admin/v1/mcp-servers calls) goes to the ServerRegistry. CompleteAuthorization
 * answers the OAuth callback of an upstream server's authorization server (the edge relays its
 * public GET /mcp/oauth/callback) and RevokeAuthorization forgets a key's token. Every error leaves
 * as a GatewayError through @gateway/grpc's unary.
 */
import { callTraceparent, GatewayError, unary, type ErrorReporter } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import { oauthCallbackResponse } from '@gateway/mcp-oauth';
import { metric, type prometheus, serviceMetrics, SpanKind, type Span, type Tracing } from '@gateway/observability';
import type {
  CallerOutput,
  CompleteAuthorizationRequestOutput,
  CompleteAuthorizationResponse,
  DeleteServerRequestOutput,
  DeleteServerResponse,
  EndSessionRequestOutput,
  EndSessionResponse,
  GetServerRequestOutput,
  HandleRequestOutput,
  HandleResponse,
  ListServersResponse,
  McpServerInfo,
  McpServiceHandlers,
  PutServerRequestOutput,
  RevokeAuthorizationRequestOutput,
  RevokeAuthorizationResponse,
} from '@gateway/proto';
import type { Aggregator, McpCaller } from './aggregator.js';
import type { ClientSessions } from './client-sessions.js';
import type { ServerRegistry, StoredServer } from './server-registry.js';
import type { UpstreamCredentials } from './upstream-credentials.js';
import { ListenStreams } from './listen-streams.js';
import type { UpstreamPool } from './upstream-pool.js';

/**
 * The tool-call outcomes exported from 0 (the others appear when they happen): the ones the alerts'
 * error ratio reads, and `ok`, its denominator.
 */
const TOOL_CALL_OUTCOMES = ['ok', 'upstream_error', 'timeout', 'credentials_unavailable', 'response_too_large'];

/** What the handlers are built from. */
export interface McpServiceDependencies {
  aggregator: Aggregator;
  registry: ServerRegistry;
  pool: UpstreamPool;
  sessions: ClientSessions;
  /** Per-key credentials of `auth: oauth` servers: the callback and revocation use them. */
  credentials: UpstreamCredentials;
  logger: Logger;
  /** Where the service's metrics are registered. */
  metrics: prometheus.Registry;
  /** Traces (OTLP), when configured: a span per message, a child of the edge's. */
  tracing?: Tracing;
}

function callerOf(caller: CallerOutput | null | undefined): McpCaller {
  const keyId = caller?.key_id ?? '';
  if (!keyId) throw GatewayError.of('invalid_request', 'caller.key_id is required.', { param: 'caller' });
  return { keyId, teamId: caller?.team_id ?? '', toolAllowLists: (caller?.tool_allow_lists ?? []).map((list) => list.tools ?? []) };
}

function serverInfo(server: StoredServer): McpServerInfo {
  return {
    name: server.name,
    url: server.url,
    transport: server.transport === 'sse' ? 'TRANSPORT_SSE' : 'TRANSPORT_STREAMABLE_HTTP',
    header_names: server.header_names,
    auth: server.auth === 'oauth' ? 'UPSTREAM_AUTH_OAUTH' : 'UPSTREAM_AUTH_UNSPECIFIED',
    description: server.description,
    updated_at_ms: server.updated_at_ms,
    ...(server.oauth && {
      oauth: { client_id: server.oauth.client_id, scopes: server.oauth.scopes },
      oauth_client_secret_set: server.oauth.client_secret_sealed !== '',
    }),
  };
}

/** The handlers, and a way to end every open Listen stream at shutdown. */
export function createMcpService({ aggregator, registry, pool, sessions, credentials, logger, metrics: registers, tracing }: McpServiceDependencies): {
  handlers: McpServiceHandlers;
  endListens(): void;
} {
  const report: ErrorReporter = (error, method, requestId) => logger.error({ err: error, method, request_id: requestId }, 'MCP service call failed');
  // biome-ignore format: one metric a line, a table of name, help and labels
  const { messages, toolCalls } = serviceMetrics(registers, {
    messages: metric.counterBy('gateway_mcp_messages_total', 'JSON-RPC messages answered by the MCP service, by method (tools/call, tools/list, ...; other for the rest) and HTTP status.', ['method', 'status']),
    toolCalls: metric.histogram('gateway_mcp_tool_call_duration_seconds', 'Duration of tools/call requests to upstream MCP servers, by outcome (ok, or the failure code: upstream_error, timeout, tool_error, unknown_tool, ...).', [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], ['outcome'], TOOL_CALL_OUTCOMES),
  });
  const known = new Set([
    'initialize',
    'ping',
    'tools/list',
    'tools/call',
    'prompts/list',
    'prompts/get',
    'resources/list',
    'resources/read',
    'resources/templates/list',
  ]);

  const streams = new ListenStreams(sessions, callerOf, report);
  streams.follow(pool);

  async function handle(request: HandleRequestOutput, context?: unknown): Promise<HandleResponse> {
    const span = tracing?.startSpan('mcp.handle', {
      kind: SpanKind.SERVER,
      parent: callTraceparent(context),
      attributes: { 'rpc.system': 'grpc', 'rpc.method': 'Handle' },
    });
    try {
      return await answerMessage(request, span);
    } finally {
      span?.end();
    }
  }

  async function answerMessage(request: HandleRequestOutput, span: Span | undefined): Promise<HandleResponse> {
    const answer = await aggregator.handle({
      caller: callerOf(request.caller),
      sessionId: request.session_id ?? '',
      protocolVersion: request.protocol_version ?? '',
      messageJson: request.message_json ?? '',
    });
    messages.inc({
      method: known.has(answer.method ?? '') ? answer.method! : answer.method?.startsWith('notifications/') ? 'notification' : 'other',
      status: String(answer.httpStatus),
    });
    const call = answer.toolCall;
    span?.setAttributes({
      'gateway.mcp.method': answer.method ?? '',
      'http.response.status_code': answer.httpStatus,
      ...(call && { 'gateway.mcp.server': call.server, 'gateway.mcp.tool': call.tool, 'gateway.mcp.error_code': call.errorCode }),
    });
    if (call) toolCalls.observe({ outcome: call.failed ? call.errorCode || 'failed' : 'ok' }, call.latencyMs / 1000);
    return {
      http_status: answer.httpStatus,
      message_json: answer.messageJson,
      session_id: answer.sessionId ?? '',
      method: answer.method ?? '',
      ...(call && { tool_call: { server: call.server, tool: call.tool, failed: call.failed, error_code: call.errorCode, latency_ms: call.latencyMs } }),
    };
  }

  async function endSession(request: EndSessionRequestOutput): Promise<EndSessionResponse> {
    const caller = callerOf(request.caller);
    if (!(await sessions.end(request.session_id ?? '', caller.keyId))) throw GatewayError.of('not_found', 'Session not found.');
    return {};
  }

  async function putServer(request: PutServerRequestOutput): Promise<McpServerInfo> {
    const transport = request.transport === 'TRANSPORT_SSE' ? 'sse' : request.transport === 'TRANSPORT_STREAMABLE_HTTP' ? 'streamable_http' : undefined;
    if (!transport) throw GatewayError.of('invalid_request', 'transport must be streamable_http or sse.', { param: 'transport' });
    const stored = await registry.put({
      name: request.name ?? '',
      url: request.url ?? '',
      transport,
      auth: request.auth === 'UPSTREAM_AUTH_OAUTH' ? 'oauth' : 'none',
      description: request.description ?? '',
      headers: request.keep_headers ? undefined : { ...(request.headers ?? {}) },
      ...(request.oauth && {
        oauth: { clientId: request.oauth.client_id ?? '', clientSecret: request.oauth.client_secret ?? '', scopes: [...(request.oauth.scopes ?? [])] },
      }),
    });
    logger.info({ server: stored.name, url: stored.url, transport: stored.transport }, 'MCP server saved');
    return serverInfo(stored);
  }

  async function listServers(): Promise<ListServersResponse> {
    return { servers: (await registry.list()).map(serverInfo) };
  }

  async function getServer(request: GetServerRequestOutput): Promise<McpServerInfo> {
    const server = await registry.get(request.name ?? '');
    if (!server) throw GatewayError.of('not_found', 'No MCP server has this name.', { param: 'name' });
    return serverInfo(server);
  }

  async function deleteServer(request: DeleteServerRequestOutput): Promise<DeleteServerResponse> {
    if (!(await registry.delete(request.name ?? ''))) throw GatewayError.of('not_found', 'No MCP server has this name.', { param: 'name' });
    logger.info({ server: request.name }, 'MCP server deleted');
    return {};
  }

  async function completeAuthorization(request: CompleteAuthorizationRequestOutput): Promise<CompleteAuthorizationResponse> {
    const complete = credentials.complete?.bind(credentials);
    if (!complete)
      return {
        http_status: 404,
        headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' },
        body: JSON.stringify({
          error: { message: 'This gateway does not offer OAuth for MCP servers.', type: 'invalid_request_error', param: null, code: 'oauth_not_configured' },
        }),
      };
    // The query's empty fields were absent (proto3 strings): the library tells a missing state from a wrong one.
    const query = Object.fromEntries(
      Object.entries({ code: request.code, state: request.state, error: request.error }).filter((entry): entry is [string, string] => Boolean(entry[1])),
    );
    const answer = await oauthCallbackResponse({ complete }, query, request.accept ?? '');
    if (answer.completed) {
      // The key's session to that server (if any) opened with no token: the next call opens one with it.
      pool.forget(answer.completed.serverId, answer.completed.keyId);
      logger.info({ key_id: answer.completed.keyId, server: answer.completed.serverId }, 'MCP OAuth authorization completed');
    } else logger.info({ status: answer.status }, 'MCP OAuth callback refused');
    return { http_status: answer.status, headers: answer.headers, body: answer.body };
  }

  async function revokeAuthorization(request: RevokeAuthorizationRequestOutput): Promise<RevokeAuthorizationResponse> {
    const caller = callerOf(request.caller);
    const server = request.server ?? '';
    if (!server) throw GatewayError.of('invalid_request', 'server is required.', { param: 'server' });
    if (!credentials.revoke) return { revoked: false };
    const held = (await credentials.list?.(caller.keyId))?.some((entry) => entry.serverId === server) ?? false;
    await credentials.revoke(caller.keyId, server);
    pool.forget(server, caller.keyId);
    logger.info({ key_id: caller.keyId, server, revoked: held }, 'MCP OAuth authorization revoked');
    return { revoked: held };
  }

  return {
    handlers: {
      Handle: unary(handle, 'Handle', report),
      Listen: streams.listen,
      EndSession: unary(endSession, 'EndSession', report),
      PutServer: unary(putServer, 'PutServer', report),
      ListServers: unary(listServers, 'ListServers', report),
      GetServer: unary(getServer, 'GetServer', report),
      DeleteServer: unary(deleteServer, 'DeleteServer', report),
      CompleteAuthorization: unary(completeAuthorization, 'CompleteAuthorization', report),
      RevokeAuthorization: unary(revokeAuthorization, 'RevokeAuthorization', report),
    },
    endListens: () => streams.endAll(),
  };
}
