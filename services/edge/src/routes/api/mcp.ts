/**
 * The MCP gateway: `/mcp`, MCP's Streamable HTTP transport (protocol 2025-06-18 and later), as one
 * aggregated MCP server over the upstream servers the operator declared. The edge speaks HTTP only:
 * it checks the caller's gateway key with auth (the same decision as the model allow-lists, which
 * also carries the key's MCP tool allow-lists) and relays each JSON-RPC message to the MCP service
 * (gateway.mcp.v1.McpService), which holds the upstream sessions.
 *
 * - POST: one JSON-RPC message; the answer is JSON (202 for a notification), `Mcp-Session-Id` on
 *   initialize. A tools/call counts as a request against the key's limits (a denial is a JSON-RPC
 *   error the client shows), and is metered (a usage event, operation `mcp.tools/call`, model the
 *   namespaced tool), traced, and audited (auth's audit trail, action `mcp.tool_call`, and a log
 *   line: key, team, server, tool; never arguments or results). With a request log, each one is a
 *   row of it too (mcp-tool-call-log.ts), published after the answer. The tools/call's own path is
 *   mcp-tool-call.ts; the calls to auth and the MCP service every method makes, mcp-calls.ts.
 * - GET: the session's server-to-client SSE stream (list_changed notifications); the key is checked
 *   again every few seconds, so a revoked key's stream ends.
 * - DELETE: ends the session.
 * - GET /mcp/oauth/callback: where an upstream server's authorization server sends a user back
 *   after they authorized the gateway for their key (the link an `auth: oauth` server's JSON-RPC
 *   error carries). Public, no gateway key: the single-use state names the key and the server. It
 *   is relayed to the MCP service (CompleteAuthorization), whose page or JSON is sent as it is.
 * - DELETE /mcp/oauth/{server}: the key forgets (and revokes upstream) its own token for a server.
 * - A request without a valid key is a 401 with `WWW-Authenticate: Bearer resource_metadata=...`,
 *   and `/.well-known/oauth-protected-resource(/mcp)` describes the resource (RFC 9728), so that
 *   clients doing MCP's authorization discovery find their way; a key is sent as a bearer header.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { callMetadata, callUnary } from '@gateway/grpc';
import type {
  CompleteAuthorizationRequest,
  CompleteAuthorizationResponseOutput,
  EndSessionRequest,
  EndSessionResponseOutput,
  HandleResponseOutput,
  ListenEventOutput,
  McpServiceClient,
  RevokeAuthorizationRequest,
  RevokeAuthorizationResponseOutput,
} from '@gateway/proto';
import { bearerKey, denialError, noteKeyChecked } from '../../auth/key-check.js';
import type { EdgeDependencies } from '../../dependencies.js';
import { edgeError } from '../../error-codes.js';
import type { RequestError } from '../../errors.js';
import type { WireErrors } from '../../wire-errors.js';
import { jsonNestsDeeperThan, MAX_JSON_NESTING } from '../../wire/json-nesting.js';
import { callerOf, decide, handleMessage, header, mcpFailure, sendAnswer } from './mcp-calls.js';
import { callTool } from './mcp-tool-call.js';

/** How often an open GET stream checks its key again (a revoked key's stream ends within this). */
const STREAM_KEY_CHECK_MS = 2_000;
/** How often an idle GET stream sends an SSE comment, so that proxies keep it open. */
const STREAM_KEEPALIVE_MS = 15_000;

/** Errors of /mcp as JSON-RPC error responses (id null: the message was not answered). */
export const mcpErrors: WireErrors = {
  renderError(error: RequestError): string {
    return JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: error.message } });
  },
  readKey: bearerKey,
};

/** Where a request's client reached the edge (scheme and host), for the resource's URLs. */
function origin(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

/** The protected-resource metadata URL of /mcp (RFC 9728's well-known path for the resource). */
function resourceMetadataUrl(request: FastifyRequest): string {
  return `${origin(request)}/.well-known/oauth-protected-resource/mcp`;
}

/** The id and method of a message, as far as the body shows them (a malformed body: none). */
function peek(text: string): { id: string | number | null; method: string } {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return { id: null, method: '' };
    const { id, method } = value as { id?: unknown; method?: unknown };
    return { id: typeof id === 'string' || typeof id === 'number' ? id : null, method: typeof method === 'string' ? method : '' };
  } catch {
    return { id: null, method: '' };
  }
}

/** Registers /mcp and its protected-resource metadata when an MCP service is configured. */
export function registerMcp(app: FastifyInstance, deps: EdgeDependencies): void {
  const mcp = deps.mcp;
  if (!mcp) return;
  const metadata = async (request: FastifyRequest) => ({
    resource: `${origin(request)}/mcp`,
    authorization_servers: [],
    bearer_methods_supported: ['header'],
    resource_name: 'LLM gateway MCP',
    resource_documentation: `${origin(request)}/console`,
  });
  app.get('/.well-known/oauth-protected-resource', metadata);
  app.get('/.well-known/oauth-protected-resource/mcp', metadata);

  void app.register(async (scope) => {
    // The body is relayed as text: the MCP service parses and validates it, answering JSON-RPC errors.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: deps.config.EDGE_MCP_BODY_LIMIT_BYTES }, (_request, body, done) =>
      done(null, body),
    );
    scope.addHook('onSend', async (request, reply, payload) => {
      if (reply.statusCode === 401) void reply.header('www-authenticate', `Bearer resource_metadata="${resourceMetadataUrl(request)}"`);
      return payload;
    });
    const config = { wire: mcpErrors };
    scope.post('/mcp', { config, bodyLimit: deps.config.EDGE_MCP_BODY_LIMIT_BYTES }, (request, reply) => post(deps, mcp, request, reply));
    scope.get('/mcp', { config }, (request, reply) => listen(deps, mcp, request, reply));
    scope.delete('/mcp', { config }, (request, reply) => end(deps, mcp, request, reply));
  });
  app.get('/mcp/oauth/callback', (request, reply) => completeAuthorization(deps, mcp, request, reply));
  app.delete('/mcp/oauth/:server', (request) => revokeAuthorization(deps, mcp, request));
}

/** A query parameter's first value ('' when absent); the MCP service tells a missing state from a bad one. */
function queryValue(query: unknown, name: string): string {
  const value = (query as Record<string, unknown> | undefined)?.[name];
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && typeof value[0] === 'string') return value[0];
  return '';
}

/** GET /mcp/oauth/callback: the authorization server's redirect, answered by the MCP service. */
async function completeAuthorization(deps: EdgeDependencies, mcp: McpServiceClient, request: FastifyRequest, reply: FastifyReply): Promise<string> {
  let answer: CompleteAuthorizationResponseOutput;
  try {
    answer = await callUnary<CompleteAuthorizationRequest, CompleteAuthorizationResponseOutput>(
      mcp,
      mcp.CompleteAuthorization,
      {
        code: queryValue(request.query, 'code'),
        state: queryValue(request.query, 'state'),
        error: queryValue(request.query, 'error'),
        accept: header(request, 'accept'),
      },
      { deadlineMs: deps.config.EDGE_MCP_DEADLINE_MS, requestId: request.id },
    );
  } catch (error) {
    throw mcpFailure(deps, error, request.id);
  }
  void reply.status(answer.http_status || 502).headers(answer.headers ?? {});
  return answer.body ?? '';
}

/** DELETE /mcp/oauth/{server}: the calling key's token for the server is removed and revoked upstream. */
async function revokeAuthorization(deps: EdgeDependencies, mcp: McpServiceClient, request: FastifyRequest): Promise<object> {
  const apiKey = bearerKey(request);
  noteKeyChecked(request);
  const decision = await decide(deps, apiKey, request.id, false);
  if (decision.decision !== 'DECISION_ALLOW') throw denialError(decision);
  const server = (request.params as { server?: string }).server ?? '';
  let answer: RevokeAuthorizationResponseOutput;
  try {
    answer = await callUnary<RevokeAuthorizationRequest, RevokeAuthorizationResponseOutput>(
      mcp,
      mcp.RevokeAuthorization,
      { caller: callerOf(decision), server },
      { deadlineMs: deps.config.EDGE_MCP_DEADLINE_MS, requestId: request.id },
    );
  } catch (error) {
    throw mcpFailure(deps, error, request.id);
  }
  return { object: 'mcp.authorization', server, revoked: answer.revoked === true };
}

/** POST /mcp: one JSON-RPC message, a tools/call (mcp-tool-call.ts) or any other, relayed to the MCP service. */
async function post(deps: EdgeDependencies, mcp: McpServiceClient, request: FastifyRequest, reply: FastifyReply): Promise<string> {
  const apiKey = bearerKey(request);
  noteKeyChecked(request);
  const text = typeof request.body === 'string' ? request.body : '';
  // Nothing an MCP message carries nests this deep; deeper text costs V8 more to parse and to send on.
  if (jsonNestsDeeperThan(text, MAX_JSON_NESTING)) {
    void reply.status(400).header('content-type', 'application/json');
    return JSON.stringify({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: `Invalid Request: the message nests objects and arrays more than ${MAX_JSON_NESTING} levels deep.` },
    });
  }
  const { id, method } = peek(text);
  const receivedAtMs = Date.now();
  if (method === 'tools/call') return callTool(deps, mcp, reply, { request, id, text, receivedAtMs, decision: await decide(deps, apiKey, request.id, true) });
  const decision = await decide(deps, apiKey, request.id, false);
  if (decision.decision !== 'DECISION_ALLOW') throw denialError(decision);
  let answer: HandleResponseOutput;
  try {
    answer = await handleMessage(deps, mcp, request, { decision, json: text });
  } catch (error) {
    throw mcpFailure(deps, error, request.id);
  }
  return sendAnswer(reply, answer, answer.message_json);
}

/** GET /mcp: the session's server-to-client SSE stream, relayed from the MCP service's Listen. */
async function listen(deps: EdgeDependencies, mcp: McpServiceClient, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const apiKey = bearerKey(request);
  noteKeyChecked(request);
  if (!header(request, 'accept').includes('text/event-stream'))
    throw edgeError('method_not_allowed', 'GET /mcp opens the server-to-client stream: send Accept: text/event-stream.', {
      headers: { allow: 'POST, GET, DELETE' },
    });
  const sessionId = header(request, 'mcp-session-id');
  if (!sessionId) throw edgeError('mcp_session_required', 'Bad Request: Mcp-Session-Id header is required.');
  const decision = await decide(deps, apiKey, request.id, false);
  if (decision.decision !== 'DECISION_ALLOW') throw denialError(decision);
  const { metadata } = callMetadata({ deadlineMs: 0, requestId: request.id });
  const call = mcp.Listen({ caller: callerOf(decision), session_id: sessionId }, metadata);
  await new Promise<void>((resolve, reject) => {
    let open = false;
    const timers: NodeJS.Timeout[] = [];
    const close = () => {
      for (const timer of timers) clearInterval(timer);
      call.cancel();
      if (open && !reply.raw.writableEnded) reply.raw.end();
      resolve();
    };
    call.once('metadata', () => {
      open = true;
      void reply.hijack();
      reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-request-id': request.id });
      reply.raw.write(': stream open\n\n');
      timers.push(setInterval(() => reply.raw.write(': keepalive\n\n'), STREAM_KEEPALIVE_MS));
      // A key revoked (or whose MCP rights end) while the stream is open ends it.
      timers.push(
        setInterval(() => {
          decide(deps, apiKey, request.id, false).then(
            (again) => {
              if (again.decision !== 'DECISION_ALLOW') close();
            },
            () => undefined,
          );
        }, STREAM_KEY_CHECK_MS),
      );
      request.raw.once('close', close);
    });
    call.on('data', (event: ListenEventOutput) => {
      if (open) reply.raw.write(`event: message\ndata: ${event.message_json ?? ''}\n\n`);
    });
    call.once('end', close);
    call.once('error', (error: unknown) => {
      if (open) close();
      else reject(mcpFailure(deps, error, request.id));
    });
  });
}

/** DELETE /mcp: ends the session. */
async function end(deps: EdgeDependencies, mcp: McpServiceClient, request: FastifyRequest, reply: FastifyReply): Promise<string> {
  const apiKey = bearerKey(request);
  noteKeyChecked(request);
  const sessionId = header(request, 'mcp-session-id');
  if (!sessionId) throw edgeError('mcp_session_required', 'Bad Request: Mcp-Session-Id header is required.');
  const decision = await decide(deps, apiKey, request.id, false);
  if (decision.decision !== 'DECISION_ALLOW') throw denialError(decision);
  try {
    await callUnary<EndSessionRequest, EndSessionResponseOutput>(
      mcp,
      mcp.EndSession,
      { caller: callerOf(decision), session_id: sessionId },
      { deadlineMs: deps.config.EDGE_CONTROL_DEADLINE_MS, requestId: request.id },
    );
  } catch (error) {
    throw mcpFailure(deps, error, request.id);
  }
  void reply.status(200);
  return '';
}
