/**
 * Upstream MCP servers for the end-to-end tests, built with the official MCP TypeScript SDK on
 * loopback: Streamable HTTP (stateless: a server per request, as the SDK's examples do) or the
 * earlier HTTP+SSE transport, optionally refusing requests without an API key header. Each counts
 * the tool calls it served, so a test can tell that a refused call never reached it.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/** A tool of a fake upstream: its answer from its arguments. */
export type FakeTool = (args: Record<string, unknown>) => string | Promise<string>;

/** A running fake upstream. */
export interface McpUpstream {
  /** The MCP endpoint (`/mcp` for Streamable HTTP, `/sse` for HTTP+SSE). */
  url: string;
  /** Tool calls served, by tool name. */
  calls: Map<string, number>;
  /** Requests refused for a missing or wrong API key. */
  refused: number;
  /**
   * Adds a tool; a stateful server tells every open session (`notifications/tools/list_changed`
   * on its GET stream).
   */
  addTool(name: string, answer: FakeTool): void;
  stop(): Promise<void>;
}

/** Options of a fake upstream. */
export interface McpUpstreamOptions {
  name: string;
  tools: Record<string, FakeTool>;
  /** Refuse (401) any request whose `x-api-key` header is not this. */
  apiKey?: string;
  transport?: 'streamable_http' | 'sse';
  /** Streamable HTTP with sessions (Mcp-Session-Id, a GET stream each), so that it can notify its clients. */
  stateful?: boolean;
  /** A prompt `brief` (argument `topic`) and a resource `<name>://readme` with this text. */
  extras?: string;
}

function registerTool(server: McpServer, options: McpUpstreamOptions, calls: Map<string, number>, name: string, answer: FakeTool): void {
  server.registerTool(
    name,
    { description: `The ${name} tool of ${options.name}.`, inputSchema: { a: z.number().optional(), b: z.number().optional(), text: z.string().optional() } },
    async (args) => {
      calls.set(name, (calls.get(name) ?? 0) + 1);
      return { content: [{ type: 'text', text: await answer(args as Record<string, unknown>) }] };
    },
  );
}

function buildServer(options: McpUpstreamOptions, calls: Map<string, number>): McpServer {
  const server = new McpServer({ name: options.name, version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
  for (const [name, answer] of Object.entries(options.tools)) registerTool(server, options, calls, name, answer);
  const extras = options.extras;
  if (extras !== undefined) {
    server.registerPrompt('brief', { description: 'A brief.', argsSchema: { topic: z.string() } }, ({ topic }) => ({
      messages: [{ role: 'user', content: { type: 'text', text: `${extras}: ${topic}` } }],
    }));
    server.registerResource('readme', `${options.name}://readme`, { mimeType: 'text/plain' }, async (uri) => ({
      contents: [{ uri: uri.href, text: extras }],
    }));
  }
  return server;
}

async function readBody(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : undefined;
}

/** Starts a fake upstream MCP server on a free loopback port. */
export async function startMcpUpstream(options: McpUpstreamOptions): Promise<McpUpstream> {
  const calls = new Map<string, number>();
  const sseSessions = new Map<string, SSEServerTransport>();
  const sessions = new Map<string, { server: McpServer; transport: StreamableHTTPServerTransport }>();
  const upstream = { calls, refused: 0 } as McpUpstream;
  upstream.addTool = (name, answer) => {
    options.tools[name] = answer;
    // Registering on a connected server sends notifications/tools/list_changed.
    for (const session of sessions.values()) registerTool(session.server, options, calls, name, answer);
  };
  const http: Server = createServer((request, response) => {
    void (async () => {
      if (options.apiKey && request.headers['x-api-key'] !== options.apiKey) {
        upstream.refused += 1;
        response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"missing or wrong x-api-key"}');
        return;
      }
      const path = (request.url ?? '').split('?')[0];
      if (options.transport === 'sse') {
        if (request.method === 'GET' && path === '/sse') {
          const transport = new SSEServerTransport('/messages', response);
          sseSessions.set(transport.sessionId, transport);
          response.on('close', () => sseSessions.delete(transport.sessionId));
          await buildServer(options, calls).connect(transport);
          return;
        }
        if (request.method === 'POST' && path === '/messages') {
          const id = new URL(request.url ?? '', 'http://x').searchParams.get('sessionId') ?? '';
          const transport = sseSessions.get(id);
          if (!transport) return void response.writeHead(404).end();
          await transport.handlePostMessage(request, response, await readBody(request));
          return;
        }
        response.writeHead(404).end();
        return;
      }
      if (path !== '/mcp') return void response.writeHead(404).end();
      if (options.stateful) {
        const id = request.headers['mcp-session-id'];
        const existing = typeof id === 'string' ? sessions.get(id) : undefined;
        if (existing) {
          await existing.transport.handleRequest(request, response, request.method === 'POST' ? await readBody(request) : undefined);
          return;
        }
        if (request.method !== 'POST') return void response.writeHead(400).end();
        const server = buildServer(options, calls);
        const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (sessionId) => {
            sessions.set(sessionId, { server, transport });
          },
        });
        transport.onclose = () => {
          if (transport.sessionId) sessions.delete(transport.sessionId);
        };
        await server.connect(transport);
        await transport.handleRequest(request, response, await readBody(request));
        return;
      }
      if (request.method !== 'POST') return void response.writeHead(405, { allow: 'POST' }).end();
      const server = buildServer(options, calls);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      response.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(request, response, await readBody(request));
    })().catch(() => {
      if (!response.headersSent) response.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  upstream.url = `http://127.0.0.1:${port}${options.transport === 'sse' ? '/sse' : '/mcp'}`;
  upstream.stop = () =>
    new Promise<void>((resolve) => {
      http.closeAllConnections();
      http.close(() => resolve());
    });
  return upstream;
}
