/**
 * GET /admin/v1/tool-calls and GET /admin/v1/tool-calls/{id}: the MCP tool calls of the request
 * log, searched through the request-log service (REQUEST_LOG_SERVICE_ADDR), in the admin scope (an
 * admin or a viewer), with the envelope and keyset pages of /admin/v1/requests. Without a request
 * log both are a 503 `request_log_not_configured`.
 */
import type { FastifyInstance } from 'fastify';
import { callUnary } from '@gateway/grpc';
import type {
  GetToolCallRequest,
  GetToolCallResponseOutput,
  SearchToolCallsRequest,
  SearchToolCallsResponseOutput,
  ToolCallRecordOutput,
} from '@gateway/proto';
import type { EdgeDependencies } from '../../dependencies.js';
import { edgeError } from '../../error-codes.js';
import type { List, LoggedToolCall, LoggedToolCallDetail, ToolCallQuery } from './admin-api-schemas.js';
import { ToolCallQuerySchema } from './admin-api-schemas.js';
import { bodiesJson, guardrailJson } from './admin-request-json.js';
import { mayReadBodies, notConfigured, timeRangeOf } from './admin-request-log.js';
import { registerAdminScope } from './admin-scope.js';

/** A validated query as the request log's search. */
function searchOf(query: ToolCallQuery): SearchToolCallsRequest {
  return {
    ...timeRangeOf(query),
    key_id: query.key_id ?? '',
    team_id: query.team_id ?? '',
    server: query.server ?? '',
    tool: query.tool ?? '',
    outcome: query.outcome ?? '',
    ascending: query.order === 'asc',
    page_size: Number(query.limit ?? 50),
    cursor: query.cursor ?? '',
  };
}

/** A logged tool call as the admin API shows it. */
export function toolCallJson(record: ToolCallRecordOutput): LoggedToolCall {
  return {
    object: 'gateway.tool_call',
    id: record.event_id ?? '',
    request_id: record.request_id ?? '',
    created_at: Number(record.received_at_ms ?? 0),
    key_id: record.key_id ?? '',
    team_id: record.team_id || null,
    server: record.server ?? '',
    tool: record.tool ?? '',
    outcome: record.outcome || 'unspecified',
    error_code: record.error_code || null,
    latency_ms: Number(record.latency_ms ?? 0),
    guardrails: (record.guardrails ?? []).map((decision) => ({
      ...guardrailJson(decision),
      path: decision.path ?? '',
      start: typeof decision.start === 'number' ? decision.start : null,
      end: typeof decision.end === 'number' ? decision.end : null,
    })),
  };
}

/** Registers the tool calls' routes in the admin scope. */
export function registerAdminToolCalls(app: FastifyInstance, deps: EdgeDependencies): void {
  registerAdminScope(app, deps, (admin, options) => {
    admin.get<{ Querystring: ToolCallQuery }>(
      '/admin/v1/tool-calls',
      { schema: { querystring: ToolCallQuerySchema } },
      async (request): Promise<List<LoggedToolCall> & { has_more: boolean; next_cursor: string | null }> => {
        const log = deps.requestLog;
        if (!log) throw notConfigured('tool calls');
        const page = await callUnary<SearchToolCallsRequest, SearchToolCallsResponseOutput>(
          log,
          log.SearchToolCalls,
          searchOf(request.query),
          options(request),
        );
        return { object: 'list', data: page.tool_calls.map(toolCallJson), has_more: Boolean(page.next_cursor), next_cursor: page.next_cursor || null };
      },
    );

    admin.get<{ Params: { id: string } }>('/admin/v1/tool-calls/:id', async (request): Promise<LoggedToolCallDetail> => {
      const log = deps.requestLog;
      if (!log) throw notConfigured('tool calls');
      const { id } = request.params;
      if (!/^[A-Za-z0-9._:-]{1,200}$/.test(id)) throw edgeError('invalid_value', "The id must be a tool call's id or its request id.", { param: 'id' });
      // The message and answer are read only for a caller allowed to see bodies.
      const includeBodies = mayReadBodies(request.adminPrincipal, deps.config.REQUEST_LOG_BODIES_VIEWERS);
      const found = await callUnary<GetToolCallRequest, GetToolCallResponseOutput>(
        log,
        log.GetToolCall,
        { id, include_bodies: includeBodies },
        options(request),
      );
      return { ...toolCallJson(found.tool_call!), bodies: found.bodies ? bodiesJson(found.bodies) : null };
    });
  });
}
