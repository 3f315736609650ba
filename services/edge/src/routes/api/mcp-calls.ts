/**
 * The calls an /mcp request makes to other services, shared by its methods: the key's decision
 * (auth's CheckKey, with the key's MCP tool allow-lists), the caller as the MCP service takes it,
 * one JSON-RPC message relayed to the MCP service (Handle) and sent back, and a failure of that
 * service as the error a client receives.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { callUnary, GatewayError, GrpcStatus } from '@gateway/grpc';
import type { CheckKeyResponseOutput, HandleRequest, HandleResponseOutput, McpServiceClient } from '@gateway/proto';
import type { EdgeDependencies } from '../../dependencies.js';
import { edgeError, UNAVAILABLE } from '../../error-codes.js';
import type { RequestError } from '../../errors.js';

/** A request header's value ('' when absent or repeated). */
export function header(request: FastifyRequest, name: string): string {
  const value = request.headers[name];
  return typeof value === 'string' ? value : '';
}

/** The key decision of an /mcp request: counted (a tools/call) or only checked; a failure to decide is a 503. */
export async function decide(deps: EdgeDependencies, apiKey: string, requestId: string, count: boolean): Promise<CheckKeyResponseOutput> {
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
export function callerOf(decision: CheckKeyResponseOutput) {
  return { key_id: decision.key_id ?? '', team_id: decision.team_id ?? '', tool_allow_lists: decision.mcp_tool_allow_lists ?? [] };
}

/** A failure of the MCP service as the error to send: its own refusals as they are, else a 503. */
export function mcpFailure(deps: EdgeDependencies, error: unknown, requestId: string): RequestError {
  const failure = error instanceof GatewayError ? error : GatewayError.fromServiceError(error);
  if (failure.code === GrpcStatus.NOT_FOUND) return edgeError('mcp_session_not_found', 'Session not found.');
  deps.logger.warn({ request_id: requestId, reason: failure.reason }, 'the MCP service could not answer');
  return UNAVAILABLE.mcp();
}

/**
 * Relays one JSON-RPC message to the MCP service for the allowed caller, under the request's
 * session and protocol headers; a client that goes away cancels the call. Throws what the MCP
 * service's failure is (mcpFailure) for the caller to record first.
 */
export async function handleMessage(
  deps: EdgeDependencies,
  mcp: McpServiceClient,
  request: FastifyRequest,
  message: { decision: CheckKeyResponseOutput; json: string; traceparent?: string | undefined },
): Promise<HandleResponseOutput> {
  const controller = new AbortController();
  const abort = () => controller.abort();
  request.raw.once('close', abort);
  try {
    return await callUnary<HandleRequest, HandleResponseOutput>(
      mcp,
      mcp.Handle,
      {
        caller: callerOf(message.decision),
        session_id: header(request, 'mcp-session-id'),
        protocol_version: header(request, 'mcp-protocol-version'),
        message_json: message.json,
      },
      { deadlineMs: deps.config.EDGE_MCP_DEADLINE_MS, requestId: request.id, signal: controller.signal, traceparent: message.traceparent },
    );
  } finally {
    request.raw.off('close', abort);
  }
}

/** Sends the MCP service's answer: its status and session, the message as JSON ('' for none: a notification's 202). */
export function sendAnswer(reply: FastifyReply, answer: HandleResponseOutput, messageJson: string | undefined): string {
  if (answer.session_id) void reply.header('mcp-session-id', answer.session_id);
  void reply.status(answer.http_status || 200);
  if (!messageJson) return '';
  void reply.header('content-type', 'application/json');
  return messageJson;
}
