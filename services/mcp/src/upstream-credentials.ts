/**
 * The seam for per-user credentials to upstream MCP servers declared with `auth: oauth`: for each
 * request on behalf of a key, the pool asks `headersFor(keyId, server)` for the headers (an
 * Authorization bearer) to send, so that a refreshed token is used as soon as it exists. The
 * gateway's MCP OAuth library (@gateway/mcp-oauth: authorization code with PKCE per key) implements
 * it with this same shape, and main.ts passes it in when MCP_OAUTH_REDIRECT_URL is set; without
 * it, every such server answers a JSON-RPC error saying so. When a key has no token yet,
 * `authorizationUrl` gives the URL its user opens to grant one, which the error carries.
 */

import type { UpstreamOAuthServer } from '@gateway/mcp-oauth';

/** An upstream server as the credentials provider sees it: @gateway/mcp-oauth's own description of one. */
export type { UpstreamOAuthServer };

/** Where the headers of a key's requests to an OAuth-protected upstream come from. */
export interface UpstreamCredentials {
  /** The headers to send for this key to this server; undefined when the key has no (valid) token. */
  headersFor(keyId: string, server: UpstreamOAuthServer): Promise<Record<string, string> | undefined>;
  /** The URL the key's user opens to authorize the gateway at this server. */
  authorizationUrl?(keyId: string, server: UpstreamOAuthServer): Promise<URL>;
  /**
   * After the server answered 401 to `rejected` (what headersFor gave): the headers to retry with
   * once (a refreshed token), or undefined when the key must authorize again.
   */
  headersAfterRejection?(keyId: string, server: UpstreamOAuthServer, rejected: Record<string, string>): Promise<Record<string, string> | undefined>;
  /** The OAuth callback: stores the tokens for the key the state was issued to. */
  complete?(query: { code?: string; state?: string; error?: string }): Promise<{ keyId: string; serverId: string }>;
  /** Removes the key's token for the server and revokes it at its authorization server. */
  revoke?(keyId: string, serverId: string): Promise<void>;
  /** The servers the key holds a token for. */
  list?(keyId: string): Promise<Array<{ serverId: string; expiresAtMs?: number }>>;
}

/** Thrown when a key has no usable credentials for a server; its message is what the client is shown. */
export class CredentialsUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CredentialsUnavailableError';
  }
}

/**
 * A key has no token for the server, found while listing or on a session already open: no
 * authorization was started (each start stores a pending authorization, so only a tools/call, which
 * the key's limits count, starts one: see Aggregator).
 */
export class SignInRequiredError extends CredentialsUnavailableError {
  constructor(readonly server: string) {
    super(`The MCP server \`${server}\` needs your authorization: call its tool \`${server}__${SIGN_IN_TOOL}\` for the link.`);
    this.name = 'SignInRequiredError';
  }
}

/**
 * A sign-in was started for a key at a server: its user opens `url` to authorize the gateway there.
 * Answered as the MCP error URL elicitation required (-32042) carrying the link (see Aggregator).
 */
export class SignInLinkError extends CredentialsUnavailableError {
  constructor(
    readonly server: string,
    readonly url: URL,
  ) {
    super(`The MCP server \`${server}\` needs your authorization: open ${url.href} and then retry.`);
    this.name = 'SignInLinkError';
  }
}

/** The tool listed, for a key without a token, in place of an OAuth server's tools: calling it answers the sign-in link. */
export const SIGN_IN_TOOL = 'sign_in';

/** The credentials of a gateway without the MCP OAuth library: none, for every key and server. */
export const NO_UPSTREAM_CREDENTIALS: UpstreamCredentials = {
  async headersFor(): Promise<undefined> {
    return undefined;
  },
};

/**
 * The headers of a key's request to an OAuth-protected server, or CredentialsUnavailableError:
 * SignInRequiredError (nothing started: see authorizationNeeded), or (no provider) that the gateway
 * does not offer it.
 */
export async function oauthHeaders(credentials: UpstreamCredentials, keyId: string, server: UpstreamOAuthServer): Promise<Record<string, string>> {
  const headers = await credentials.headersFor(keyId, server);
  if (headers) return headers;
  if (credentials.authorizationUrl) throw new SignInRequiredError(server.id);
  return authorizationNeeded(credentials, keyId, server);
}

/** Throws the SignInLinkError that tells the key's user where to authorize (or the CredentialsUnavailableError that the gateway cannot). */
export async function authorizationNeeded(credentials: UpstreamCredentials, keyId: string, server: UpstreamOAuthServer): Promise<never> {
  if (!credentials.authorizationUrl)
    throw new CredentialsUnavailableError(
      `The MCP server \`${server.id}\` needs per-user OAuth authorization, which this gateway does not offer yet. Ask your administrator.`,
    );
  throw new SignInLinkError(server.id, await credentials.authorizationUrl(keyId, server));
}
