/**
 * The admin API's upstream MCP servers: /admin/v1/mcp-servers to declare, list, read and remove
 * the servers the MCP gateway (/mcp) aggregates, in the admin scope (admin-scope.ts: the viewer
 * role reads, the admin role changes), each an RPC of the MCP service, which keeps them in Redis
 * and serves a change on every replica within a second. A server's headers (API keys) are stored
 * encrypted and never returned: only their names are.
 */
import type { FastifyInstance } from 'fastify';
import { callUnary } from '@gateway/grpc';
import type {
  DeleteServerRequest,
  DeleteServerResponseOutput,
  GetServerRequest,
  ListServersRequest,
  ListServersResponseOutput,
  McpServerInfoOutput,
  PutServerRequest,
} from '@gateway/proto';
import type { EdgeDependencies } from '../../dependencies.js';
import { type McpServer, type McpServerPut, McpServerPutSchema } from './admin-api-schemas.js';
import { registerAdminResource } from './admin-resource.js';
import { registerAdminScope } from './admin-scope.js';

/** A server as the admin API's JSON. */
export function adminMcpServerJson(server: McpServerInfoOutput): McpServer {
  return {
    object: 'mcp_server',
    name: server.name ?? '',
    url: server.url ?? '',
    transport: server.transport === 'TRANSPORT_SSE' ? 'sse' : 'streamable_http',
    header_names: [...(server.header_names ?? [])],
    auth: server.auth === 'UPSTREAM_AUTH_OAUTH' ? 'oauth' : 'none',
    oauth:
      server.auth === 'UPSTREAM_AUTH_OAUTH'
        ? { client_id: server.oauth?.client_id ?? '', scopes: [...(server.oauth?.scopes ?? [])], client_secret_set: server.oauth_client_secret_set === true }
        : null,
    description: server.description ?? '',
    updated_at: Math.floor((server.updated_at_ms ?? 0) / 1000),
  };
}

/** Registers /admin/v1/mcp-servers when an admin credential and an MCP service are configured. */
export function registerAdminMcpServers(app: FastifyInstance, deps: EdgeDependencies): void {
  const mcp = deps.mcp;
  if (!mcp) return;
  registerAdminScope(app, deps, (admin, options) => {
    admin.put<{ Params: { name: string }; Body: McpServerPut }>(
      '/admin/v1/mcp-servers/:name',
      { schema: { body: McpServerPutSchema } },
      async (request): Promise<McpServer> => {
        const body = request.body;
        // `auth` as a word or as an object; an OAuth client's settings only in the object.
        const auth: { type: 'none' | 'oauth'; client_id?: string; client_secret?: string; scopes?: string[] } =
          typeof body.auth === 'object' ? body.auth : { type: body.auth ?? 'none' };
        const oauth = auth.type === 'oauth' ? auth : undefined;
        const put: PutServerRequest = {
          name: request.params.name,
          url: body.url,
          transport: body.transport === 'sse' ? 'TRANSPORT_SSE' : 'TRANSPORT_STREAMABLE_HTTP',
          headers: body.headers ?? {},
          keep_headers: body.headers === undefined,
          auth: auth.type === 'oauth' ? 'UPSTREAM_AUTH_OAUTH' : 'UPSTREAM_AUTH_UNSPECIFIED',
          description: body.description ?? '',
          ...(oauth && { oauth: { client_id: oauth.client_id ?? '', client_secret: oauth.client_secret ?? '', scopes: oauth.scopes ?? [] } }),
        };
        return adminMcpServerJson(await callUnary<PutServerRequest, McpServerInfoOutput>(mcp, mcp.PutServer, put, options(request)));
      },
    );

    registerAdminResource(admin, options, {
      path: '/admin/v1/mcp-servers',
      param: 'name',
      json: adminMcpServerJson,
      list: async (_request, call) => (await callUnary<ListServersRequest, ListServersResponseOutput>(mcp, mcp.ListServers, {}, call)).servers,
      get: (name, call) => callUnary<GetServerRequest, McpServerInfoOutput>(mcp, mcp.GetServer, { name }, call),
      remove: async (name, call) => {
        await callUnary<DeleteServerRequest, DeleteServerResponseOutput>(mcp, mcp.DeleteServer, { name }, call);
        return { object: 'mcp_server.deleted', name, deleted: true };
      },
    });
  });
}
