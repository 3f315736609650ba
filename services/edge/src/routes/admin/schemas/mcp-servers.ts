/** The upstream MCP servers (/admin/v1/mcp-servers): a server's body and its answer. */
import { type Static, Type } from '@sinclair/typebox';
import { fieldNames, Nullable, steps } from './common.js';

/** The transports an upstream MCP server can be reached by. */
const McpTransportSchema = Type.Union([Type.Literal('streamable_http'), Type.Literal('sse')], {
  errorMessage: "'transport' must be streamable_http or sse.",
});
const MCP_SERVER_FIELDS = ['url', 'transport', 'headers', 'auth', 'description'] as const;

/**
 * The body of PUT /admin/v1/mcp-servers/:name: where the server is, how it is reached, and the
 * headers (API keys) sent to it, stored encrypted; `headers` left out keeps the stored ones.
 */
export const McpServerPutSchema = steps(
  fieldNames(MCP_SERVER_FIELDS),
  Type.Object({ url: Type.Unknown() }, { errorMessage: { required: { url: "'url' is required: the server's MCP endpoint." } } }),
  Type.Object({
    url: Type.String({ minLength: 1, maxLength: 2048, pattern: '^https?://', errorMessage: "'url' must be an http or https URL." }),
    transport: Type.Optional(McpTransportSchema),
    headers: Type.Optional(
      Type.Record(Type.String(), Type.String({ maxLength: 8192 }), {
        maxProperties: 20,
        errorMessage: "'headers' must be an object of at most 20 header names to string values.",
      }),
    ),
    auth: Type.Optional(
      Type.Union(
        [
          Type.Literal('none'),
          Type.Literal('oauth'),
          Type.Object({ type: Type.Literal('none') }, { additionalProperties: false }),
          Type.Object(
            {
              type: Type.Literal('oauth'),
              client_id: Type.Optional(Type.String({ maxLength: 500 })),
              client_secret: Type.Optional(Type.String({ maxLength: 2000 })),
              scopes: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 50 })),
            },
            { additionalProperties: false },
          ),
        ],
        {
          errorMessage:
            '\'auth\' must be none, oauth, or {type: "oauth", client_id?, client_secret?, scopes?} (per-user OAuth credentials; the client secret is stored encrypted and kept when left out).',
        },
      ),
    ),
    description: Type.Optional(Type.String({ maxLength: 500, errorMessage: "'description' must be a string of at most 500 characters." })),
  }),
);
/** The body of PUT /admin/v1/mcp-servers/:name. */
export type McpServerPut = Static<typeof McpServerPutSchema>;

/** An upstream MCP server as the admin API shows it: never its headers' values. */
export const McpServerSchema = Type.Object({
  object: Type.Literal('mcp_server'),
  name: Type.String(),
  url: Type.String(),
  transport: Type.Union([Type.Literal('streamable_http'), Type.Literal('sse')]),
  /** The names of the headers sent to it; their values are stored encrypted and never shown. */
  header_names: Type.Array(Type.String()),
  auth: Type.Union([Type.Literal('none'), Type.Literal('oauth')]),
  /** With auth oauth: the OAuth client (never its secret: whether one is stored). */
  oauth: Nullable(Type.Object({ client_id: Type.String(), scopes: Type.Array(Type.String()), client_secret_set: Type.Boolean() })),
  description: Type.String(),
  /** Unix seconds of its latest change. */
  updated_at: Type.Integer(),
});
/** An upstream MCP server as the admin API shows it. */
export type McpServer = Static<typeof McpServerSchema>;
