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
 *   row of it too (mcp-tool-call-log.ts), published after the answer.
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
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { callMetadata, callUnary, GatewayError, GrpcStatus } from '@gateway/grpc';
import type {
  CheckKeyResponseOutput,
  CompleteAuthorizationRequest,
  CompleteAuthorizationResponseOutput,
  EndSessionRequest,
  EndSessionResponseOutput,
  HandleRequest,
  HandleResponseOutput,
  ListenEventOutput,
  McpServiceClient,
  RecordToolCallRequest,
  RecordToolCallResponseOutput,
  RevokeAuthorizationRequest,
  RevokeAuthorizationResponseOutput,
  UsageEvent,
} from '@gateway/proto';
import { bearerKey, denialError, noteKeyChecked } from '../../auth/key-check.js';
import type { WireErrors } from '../../wire-errors.js';
import type { EdgeDependencies } from '../../dependencies.js';
import { edgeError, UNAVAILABLE } from '../../error-codes.js';
import type { RequestError } from '../../errors.js';
import { jsonNestsDeeperThan, MAX_JSON_NESTING } from '../../wire/json-nesting.js';
import { guardToolArguments, guardToolResult } from '../../guardrails/mcp-guard.js';
import { decisionJson, type GuardedRequest, guardChecksOf, guardFor } from '../../guardrails/request-guard.js';
import { logToolCall, namedTool, type ToolCallOutcome } from './mcp-tool-call-log.js';

/** How often an open GET stream checks its key again (a revoked key's stream ends within this). */
const STREAM_KEY_CHECK_MS = 2_000;
/** How often an idle GET stream sends an SSE comment, so that proxies keep it open. */
const STREAM_KEEPALIVE_MS = 15_000;
/** A JSON-RPC error code of the gateway: a limit or budget of the key refused a tools/call. */
const LIMITED_CODE = -32004;

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

function header(request: FastifyRequest, name: string): string {
  const value = request.headers[name];
  return typeof value === 'string' ? value : '';
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

/** The key decision of an /mcp request: counted (a tools/call) or only checked; a failure to decide is a 503. */
async function decide(deps: EdgeDependencies, apiKey: string, requestId: string, count: boolean): Promise<CheckKeyResponseOutput> {
  try {
    return await deps.decisions.call(
      'check_key',
      {
        api_key: apiKey,
        request_id: requestId,
        reserve_tokens: 0,
        reservation_id: count ? randomUUID() : '',
        check_only: !count,
        mcp: true,
      },
      { deadlineMs: deps.config.EDGE_CONTROL_DEADLINE_MS, requestId },
    );
  } catch (error) {
    const failure = error instanceof GatewayError ? error : GatewayError.fromServiceError(error);
    deps.logger.warn({ request_id: requestId, reason: failure.reason }, 'auth could not decide');
    throw UNAVAILABLE.auth();
  }
}

/** The caller as the MCP service takes it. */
function callerOf(decision: CheckKeyResponseOutput) {
  return { key_id: decision.key_id ?? '', team_id: decision.team_id ?? '', tool_allow_lists: decision.mcp_tool_allow_lists ?? [] };
}

/** A failure of the MCP service as the error to send: its own refusals as they are, else a 503. */
function mcpFailure(deps: EdgeDependencies, error: unknown, requestId: string): RequestError {
  const failure = error instanceof GatewayError ? error : GatewayError.fromServiceError(error);
  if (failure.code === GrpcStatus.NOT_FOUND) return edgeError('mcp_session_not_found', 'Session not found.');
  deps.logger.warn({ request_id: requestId, reason: failure.reason }, 'the MCP service could not answer');
  return UNAVAILABLE.mcp();
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
  const toolCall = method === 'tools/call';
  const receivedAtMs = Date.now();
  const decision = await decide(deps, apiKey, request.id, toolCall);
  if (decision.decision !== 'DECISION_ALLOW') {
    const refusal = denialError(decision);
    // A limit or budget refusing a tool call is the tool's answer, which the client shows; a bad key is a 401.
    if (refusal.status === 401 || !toolCall) throw refusal;
    const limited = JSON.stringify({ jsonrpc: '2.0', id, error: { code: LIMITED_CODE, message: refusal.message } });
    logToolCall(deps, {
      requestId: request.id,
      receivedAtMs,
      decision,
      ...namedTool(text),
      outcome: 'limited',
      errorCode: refusal.code ?? '',
      latencyMs: 0,
      // Nothing was forwarded, nor checked by a policy: only the answer is kept.
      forwarded: '',
      answer: limited,
    });
    void reply.header('content-type', 'application/json');
    return limited;
  }
  const span = toolCall ? deps.tracing?.startSpan('mcp.tools/call', { attributes: { 'gateway.key_id': decision.key_id ?? '' } }) : undefined;
  // A tools/call's arguments and result pass the guardrails attached to the key or its team.
  const guard = toolCall
    ? guardFor(
        guardChecksOf(deps),
        {
          requestId: request.id,
          keyId: decision.key_id ?? '',
          teamId: decision.team_id ?? '',
          model: '',
          api: 'mcp',
          traceparent: deps.tracing?.traceparentOf(span),
        },
        ['POINT_TOOL_ARGUMENTS', 'POINT_TOOL_RESULT'],
      )
    : undefined;
  let forwarded = text;
  if (guard) {
    const outcome = await guardToolArguments(guard, id, text);
    if ('answer' in outcome) {
      span?.end();
      report(deps, request, decision, { receivedAtMs, server: '', tool: '', failed: true, errorCode: 'content_policy_violation', latencyMs: 0 }, guard);
      // The arguments a policy blocked are never kept: only the answer.
      logToolCall(deps, {
        requestId: request.id,
        receivedAtMs,
        decision,
        ...namedTool(text),
        outcome: 'blocked',
        errorCode: 'content_policy_violation',
        latencyMs: 0,
        guard,
        forwarded: '',
        answer: outcome.answer,
      });
      void reply.header('content-type', 'application/json');
      return outcome.answer;
    }
    forwarded = outcome.forward;
  }
  const controller = new AbortController();
  const abort = () => controller.abort();
  request.raw.once('close', abort);
  let answer: HandleResponseOutput;
  try {
    answer = await callUnary<HandleRequest, HandleResponseOutput>(
      mcp,
      mcp.Handle,
      {
        caller: callerOf(decision),
        session_id: header(request, 'mcp-session-id'),
        protocol_version: header(request, 'mcp-protocol-version'),
        message_json: forwarded,
      },
      { deadlineMs: deps.config.EDGE_MCP_DEADLINE_MS, requestId: request.id, signal: controller.signal, traceparent: deps.tracing?.traceparentOf(span) },
    );
  } catch (error) {
    span?.end();
    if (toolCall) {
      report(deps, request, decision, { receivedAtMs, server: '', tool: '', failed: true, errorCode: 'mcp_unavailable', latencyMs: 0 }, guard);
      logToolCall(deps, {
        requestId: request.id,
        receivedAtMs,
        decision,
        ...namedTool(forwarded),
        outcome: 'unavailable',
        errorCode: 'mcp_unavailable',
        latencyMs: 0,
        guard,
        forwarded,
        answer: '',
      });
    }
    throw mcpFailure(deps, error, request.id);
  } finally {
    request.raw.off('close', abort);
  }
  const call = answer.tool_call;
  const messageJson = guard && answer.message_json ? await guardToolResult(guard, answer.message_json) : answer.message_json;
  if (call) {
    span?.setAttributes({ 'gateway.mcp.server': call.server ?? '', 'gateway.mcp.tool': call.tool ?? '', 'gateway.mcp.failed': call.failed === true });
    report(
      deps,
      request,
      decision,
      {
        receivedAtMs,
        server: call.server ?? '',
        tool: call.tool ?? '',
        failed: call.failed === true,
        errorCode: call.error_code ?? '',
        latencyMs: call.latency_ms ?? 0,
      },
      guard,
    );
    const blocked = guard?.decisions.some((made) => made.point === 'POINT_TOOL_RESULT' && made.action === 'ACTION_BLOCK' && made.enforced === true) === true;
    const outcome: ToolCallOutcome = blocked ? 'blocked' : !call.failed ? 'ok' : call.error_code === 'tool_not_allowed' ? 'denied' : 'error';
    logToolCall(deps, {
      requestId: request.id,
      receivedAtMs,
      decision,
      server: call.server ?? '',
      tool: call.tool ?? '',
      outcome,
      errorCode: blocked ? 'content_policy_violation' : (call.error_code ?? ''),
      latencyMs: call.latency_ms ?? 0,
      guard,
      forwarded,
      answer: messageJson ?? '',
    });
  }
  span?.end();
  if (answer.session_id) void reply.header('mcp-session-id', answer.session_id);
  void reply.status(answer.http_status || 200);
  if (!messageJson) return '';
  void reply.header('content-type', 'application/json');
  return messageJson;
}

/** Meters, and logs as an audit line, one tools/call: who called which tool on which server, never its arguments or result. */
function report(
  deps: EdgeDependencies,
  request: FastifyRequest,
  decision: CheckKeyResponseOutput,
  call: { receivedAtMs: number; server: string; tool: string; failed: boolean; errorCode: string; latencyMs: number },
  guard?: GuardedRequest,
): void {
  const keyId = decision.key_id ?? '';
  const teamId = decision.team_id ?? '';
  const tool = call.server ? `${call.server}__${call.tool}` : 'unknown';
  deps.logger.info(
    {
      audit: 'mcp.tools/call',
      request_id: request.id,
      key_id: keyId,
      team_id: teamId || undefined,
      server: call.server,
      tool: call.tool,
      failed: call.failed,
      error_code: call.errorCode || undefined,
      latency_ms: call.latencyMs,
    },
    'MCP tool called',
  );
  const event: UsageEvent = {
    event_id: randomUUID(),
    request_id: request.id,
    key_id: keyId,
    ...(teamId ? { team_id: teamId } : {}),
    // The reservation CheckKey made for the call is settled when the event is metered.
    reservation_id: decision.reservation_id ?? '',
    model_id: tool,
    provider: 'mcp',
    received_at_ms: call.receivedAtMs,
    latency_ms: call.latencyMs,
    stream: false,
    outcome: call.failed ? 'OUTCOME_FAILED' : 'OUTCOME_COMPLETED',
    ...(call.errorCode ? { error_code: call.errorCode } : {}),
    operation: 'mcp.tools/call',
    ...(guard && guard.decisions.length > 0 ? { guardrails: guard.decisions.map(decisionJson) } : {}),
  };
  deps.usage.publish(event);
  // The audit trail keeps it too (auth's, beside the admin changes), without holding the answer back.
  callUnary<RecordToolCallRequest, RecordToolCallResponseOutput>(
    deps.adminAccess,
    deps.adminAccess.RecordToolCall,
    {
      key_id: keyId,
      team_id: teamId,
      server: call.server,
      tool: call.tool,
      failed: call.failed,
      error_code: call.errorCode,
      latency_ms: call.latencyMs,
      request_id: request.id,
    },
    { deadlineMs: deps.config.EDGE_CONTROL_DEADLINE_MS, requestId: request.id },
  ).catch((error: unknown) => {
    const failure = error instanceof GatewayError ? error : GatewayError.fromServiceError(error);
    deps.logger.warn({ request_id: request.id, reason: failure.reason }, 'a tool call could not be recorded in the audit trail');
  });
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
