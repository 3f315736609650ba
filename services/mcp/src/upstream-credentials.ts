/**
 * The seam for per-user credentials to upstream MCP servers declared with `auth: oauth`: before
 * each session to such a server on behalf of a key, the pool asks `headersFor(keyId, serverName)`
 * for the headers (an Authorization bearer) to send. The gateway's MCP OAuth library (authorization
 * code with PKCE per key) implements it; until it is wired in, every such server answers with
 * CredentialsUnavailableError, which the client sees as a JSON-RPC error.
 */

/** Where the headers of a key's session to an OAuth-protected upstream come from. */
export interface UpstreamCredentials {
  /** The headers to send for this key to this server; throws CredentialsUnavailableError when there are none. */
  headersFor(keyId: string, serverName: string): Promise<Record<string, string>>;
}

/** Thrown when a key has no usable credentials for a server (never authorized, revoked, no provider). */
export class CredentialsUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CredentialsUnavailableError';
  }
}

/** The credentials of a gateway without the MCP OAuth library: none, for every key and server. */
export const NO_UPSTREAM_CREDENTIALS: UpstreamCredentials = {
  async headersFor(_keyId: string, serverName: string): Promise<Record<string, string>> {
    throw new CredentialsUnavailableError(
      `The MCP server \`${serverName}\` needs per-user OAuth authorization, which this gateway does not offer yet. Ask your administrator.`,
    );
  },
};
