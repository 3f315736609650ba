/**
 * The MCP side of the gateway's end-to-end tests: the admin API called with a token, and the
 * official SDK's clients connected to an edge's /mcp with gateway keys, all closed together.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/** A call of an edge's admin API (`path` from the origin, `/admin/v1/…`), with a JSON body when given. */
export type AdminCall = (method: string, path: string, body?: unknown) => Promise<Response>;

/** Calls the admin API at `origin()` (read at each call: the edge starts after this is made) with `token`. */
export function adminApi(origin: () => string, token: string): AdminCall {
  return (method, path, body) =>
    fetch(`${origin()}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
}

/** The MCP clients a test opened. */
export interface McpClients {
  /** An SDK client connected to the edge at `origin`'s /mcp with a gateway key. */
  connect(origin: string, secret: string): Promise<Client>;
  /** Closes every client opened. */
  closeAll(): Promise<void>;
}

/** Opens MCP clients and remembers them for closeAll. */
export function mcpClients(): McpClients {
  const clients: Client[] = [];
  return {
    async connect(origin, secret) {
      const client = new Client({ name: 'e2e', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${secret}` } } }));
      clients.push(client);
      return client;
    },
    closeAll: async () => {
      await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
    },
  };
}

/** The names of the tools `client` is offered, sorted. */
export async function toolNames(client: Client): Promise<string[]> {
  return (await client.listTools()).tools.map((tool) => tool.name).sort();
}
