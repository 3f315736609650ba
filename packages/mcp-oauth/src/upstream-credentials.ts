/**
 * Per-gateway-key OAuth credentials for upstream MCP servers: the authorization-code flow with
 * PKCE (S256) run once for each gateway key and server, its tokens kept in Redis sealed for that
 * key and server, refreshed before they expire. User A's upstream token is never presented for
 * user B: a token is stored under the key id whose pending authorization (state) completed, is
 * sealed with that key id and server id as associated data, and is read back only under both.
 *
 * The OAuth client itself is the MCP TypeScript SDK's (`@modelcontextprotocol/sdk/client/auth.js`):
 * protected-resource metadata discovery (RFC 9728), authorization-server metadata (RFC 8414),
 * dynamic client registration (RFC 7591), PKCE, the code exchange and the refresh grant, driven
 * through its `auth()` with an `OAuthClientProvider` that keeps its state in Redis. What is ours:
 * where and how it is stored, the binding of state to key and server, the collapsing of refreshes,
 * and revocation (RFC 7009), which the SDK has no call for.
 */
import { randomBytes } from 'node:crypto';
import {
  auth,
  discoverOAuthServerInfo,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  selectClientAuthMethod,
} from '@modelcontextprotocol/sdk/client/auth.js';
import { OAuthError, ServerError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { AuthorizationServerMetadata, OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { RedisClient } from '@gateway/redis';
import { type UpstreamCredentialKeys, upstreamCredentialKeys, sha256Hex } from './keys.js';
import { assertCredentialsKey, open, ownerOf, SealedBoxError, seal } from './sealed-box.js';

/** An upstream MCP server that authorizes its callers with OAuth. */
export interface UpstreamOAuthServer {
  /** The operator's name of the server; names its stored tokens. */
  id: string;
  /** The MCP server URL (its protected-resource metadata is discovered from it). */
  url: string;
  /** A client registered by hand with the server's authorization server; without it, the gateway registers itself (RFC 7591). */
  clientId?: string;
  /** The secret of clientId, for a confidential client. */
  clientSecret?: string;
  /** The scopes to ask for; without them, those the server's metadata lists. */
  scopes?: string[];
}

/** Options of UpstreamCredentials. */
export interface UpstreamCredentialsOptions {
  /** Where tokens, pending authorizations, registrations and discovery are kept. */
  redis: RedisClient;
  /** The prefix of every key written (e.g. `mcp-oauth:`). */
  prefix: string;
  /** 32 bytes (MCP_CREDENTIALS_KEY, base64): seals tokens, client secrets and pending authorizations. */
  encryptionKey: Buffer;
  /** The gateway's public callback, e.g. https://gateway.example/mcp/oauth/callback. */
  redirectUri: string;
  /** The fetch used for every request to an authorization server (tests, proxies). */
  fetch?: typeof fetch;
  /** The clock deciding whether a token has expired, in Unix ms (tests). */
  now?: () => number;
  /** The client name registered with authorization servers. */
  clientName?: string;
  /** How long a request to an authorization server may take; 10 s. */
  requestTimeoutMs?: number;
}

/** Why a step of the flow failed: stable codes, for the caller's status mapping. */
export type UpstreamOAuthErrorReason =
  /** The callback's state is missing, unknown, expired or already used. */
  | 'invalid_state'
  /** The callback has neither code nor error. */
  | 'invalid_request'
  /** The user or the authorization server declined (the callback carried `error`). */
  | 'authorization_denied'
  /** The authorization server refused the code exchange or the registration. */
  | 'authorization_failed'
  /** The authorization server could not be reached or failed (5xx, timeout); stored tokens are kept. */
  | 'upstream_unavailable'
  /** The server's declaration is unusable (no id, a URL that is not http(s)). */
  | 'invalid_server';

/**
 * A failure of the flow. Its message is general and never holds a token, a code, a secret or an
 * authorization server's response body; `oauthError` is the server's OAuth error code when it gave
 * one (`invalid_grant`, `access_denied`), which is safe to show.
 */
export class UpstreamOAuthError extends Error {
  constructor(
    readonly reason: UpstreamOAuthErrorReason,
    message: string,
    readonly oauthError?: string,
  ) {
    super(message);
    this.name = 'UpstreamOAuthError';
  }
}

/** What is sealed for one gateway key and one server. */
interface TokenRecord {
  /** The MCP server URL the tokens were issued for: never presented to another. */
  serverUrl: string;
  tokens: OAuthTokens;
  expiresAtMs?: number;
  /** The client the tokens were issued to (revocation authenticates as it). */
  client?: OAuthClientInformationMixed;
}

/** What is sealed for one pending authorization, under its state's hash. */
interface PendingAuthorization {
  keyId: string;
  server: UpstreamOAuthServer;
  codeVerifier: string;
}

/** How long a pending authorization (its state) lives: the user has ten minutes to consent. */
export const STATE_TTL_SECONDS = 600;
/** A token this close to its expiry is refreshed first. */
export const REFRESH_BEFORE_EXPIRY_MS = 30_000;
/** How long one refresh may hold the lock; others wait at most this long. */
const REFRESH_LOCK_MS = 30_000;
/** How often a replica waiting on another's refresh looks again. */
const REFRESH_POLL_MS = 25;
/** How long discovered metadata is reused before it is discovered again. */
const DISCOVERY_TTL_SECONDS = 3_600;

// Deletes the lock only if this refresh still holds it: one that outlived its lock must not
// release the next holder's.
const RELEASE_LOCK = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
// Stores a refreshed token only if the key still holds one for the server: a revoke that came
// while the refresh was on its way is not undone by it.
const REPLACE_TOKENS = "if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) return 1 end return 0";

type Mode = { kind: 'start'; state: string } | { kind: 'complete'; codeVerifier: string } | { kind: 'refresh'; tokens: OAuthTokens };

/**
 * The SDK's view of one gateway key's session with one server. Registration and discovery are per
 * server (shared by every key); tokens and the code verifier are this key's only.
 */
class StoredSessionProvider implements OAuthClientProvider {
  /** The URL auth() sends the user to, when it starts a flow. */
  authorizationUrl?: URL;
  /** The verifier auth() generated for that flow. */
  generatedCodeVerifier?: string;
  /** The record saveTokens() stored. */
  saved?: TokenRecord;
  /** A refreshed record saveTokens() did not store, the key's token having been revoked meanwhile. */
  discarded?: TokenRecord;
  /** A failure of Redis under auth(): ours, not the authorization server's, so the caller rethrows it as it is. */
  storeFailure?: unknown;
  private client?: OAuthClientInformationMixed;

  constructor(
    private readonly store: CredentialStore,
    private readonly keyId: string,
    private readonly server: UpstreamOAuthServer,
    private readonly mode: Mode,
  ) {}

  private async stored<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      this.storeFailure ??= error;
      throw error;
    }
  }

  get redirectUrl(): string {
    return this.store.redirectUri;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.store.clientName,
      redirect_uris: [this.store.redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      ...(this.server.scopes?.length ? { scope: this.server.scopes.join(' ') } : {}),
    };
  }

  state(): string {
    // Outside a start, auth() only reaches this when a refresh was refused; the state of the flow it
    // would start is stored nowhere, so it can never complete.
    return this.mode.kind === 'start' ? this.mode.state : randomBytes(32).toString('base64url');
  }

  async clientInformation(): Promise<OAuthClientInformationMixed | undefined> {
    if (this.server.clientId) {
      this.client = { client_id: this.server.clientId, ...(this.server.clientSecret ? { client_secret: this.server.clientSecret } : {}) };
    } else {
      this.client = await this.stored(() => this.store.readClient(this.server));
    }
    return this.client;
  }

  async saveClientInformation(information: OAuthClientInformationMixed): Promise<void> {
    this.client = information;
    // A client the operator registered stays the operator's; only a registration of ours is kept.
    if (!this.server.clientId) await this.stored(() => this.store.writeClient(this.server, information));
  }

  tokens(): OAuthTokens | undefined {
    return this.mode.kind === 'refresh' ? this.mode.tokens : undefined;
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    const record: TokenRecord = {
      serverUrl: this.server.url,
      tokens,
      ...(tokens.expires_in !== undefined ? { expiresAtMs: this.store.now() + tokens.expires_in * 1000 } : {}),
      ...(this.client ? { client: this.client } : {}),
    };
    const written = await this.stored(() => this.store.writeTokens(this.keyId, this.server.id, record, { onlyReplace: this.mode.kind === 'refresh' }));
    if (written) this.saved = record;
    else this.discarded = record;
  }

  redirectToAuthorization(authorizationUrl: URL): void {
    this.authorizationUrl = authorizationUrl;
  }

  saveCodeVerifier(codeVerifier: string): void {
    this.generatedCodeVerifier = codeVerifier;
  }

  codeVerifier(): string {
    if (this.mode.kind !== 'complete') throw new Error('no code verifier outside a callback');
    return this.mode.codeVerifier;
  }

  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    if ((scope === 'all' || scope === 'client') && !this.server.clientId) await this.stored(() => this.store.deleteClient(this.server));
    if (scope === 'all' || scope === 'discovery') await this.stored(() => this.store.deleteDiscovery(this.server));
    // Only a refresh the authorization server refused invalidates a stored token: a failed callback
    // leaves the key's current token alone.
    if ((scope === 'all' || scope === 'tokens') && this.mode.kind === 'refresh') await this.stored(() => this.store.deleteTokens(this.keyId, this.server.id));
  }

  saveDiscoveryState(state: OAuthDiscoveryState): Promise<void> {
    return this.stored(() => this.store.writeDiscovery(this.server, state));
  }

  discoveryState(): Promise<OAuthDiscoveryState | undefined> {
    return this.stored(() => this.store.readDiscovery(this.server));
  }
}

/** Redis, the seal and the clock, as the provider and UpstreamCredentials use them. */
class CredentialStore {
  readonly keys: UpstreamCredentialKeys;

  readonly redis: RedisClient;
  readonly redirectUri: string;
  readonly clientName: string;
  readonly now: () => number;
  private readonly encryptionKey: Buffer;

  constructor(options: { redis: RedisClient; prefix: string; encryptionKey: Buffer; redirectUri: string; clientName: string; now: () => number }) {
    this.redis = options.redis;
    this.redirectUri = options.redirectUri;
    this.clientName = options.clientName;
    this.now = options.now;
    this.encryptionKey = options.encryptionKey;
    this.keys = upstreamCredentialKeys(options.prefix);
  }

  async readTokens(keyId: string, serverId: string): Promise<TokenRecord | undefined> {
    const blob = await this.redis.hget(this.keys.tokens(keyId), serverId);
    return blob === null ? undefined : this.openTokens(keyId, serverId, blob);
  }

  /** A stored token record, or undefined when it does not open for this key and server. */
  openTokens(keyId: string, serverId: string, blob: string): TokenRecord | undefined {
    try {
      return JSON.parse(open(this.encryptionKey, blob, ownerOf('token', keyId, serverId))) as TokenRecord;
    } catch (error) {
      if (error instanceof SealedBoxError) return undefined;
      throw error;
    }
  }

  /** Stores a key's tokens for a server; with `onlyReplace`, only over tokens still there. Resolves whether it stored them. */
  async writeTokens(keyId: string, serverId: string, record: TokenRecord, options: { onlyReplace?: boolean } = {}): Promise<boolean> {
    const blob = seal(this.encryptionKey, JSON.stringify(record), ownerOf('token', keyId, serverId));
    if (!options.onlyReplace) {
      await this.redis.hset(this.keys.tokens(keyId), serverId, blob);
      return true;
    }
    return Number(await this.redis.eval(REPLACE_TOKENS, 1, this.keys.tokens(keyId), serverId, blob)) === 1;
  }

  async deleteTokens(keyId: string, serverId: string): Promise<void> {
    await this.redis.hdel(this.keys.tokens(keyId), serverId);
  }

  async writePending(state: string, pending: PendingAuthorization): Promise<void> {
    const name = this.keys.pendingAuthorization(state);
    await this.redis.set(name, seal(this.encryptionKey, JSON.stringify(pending), ownerOf('state', sha256Hex(state))), 'EX', STATE_TTL_SECONDS);
  }

  /** Takes a pending authorization: GETDEL, so that a state completes at most once across replicas. */
  async takePending(state: string): Promise<PendingAuthorization | undefined> {
    const blob = await this.redis.getdel(this.keys.pendingAuthorization(state));
    if (blob === null) return undefined;
    try {
      return JSON.parse(open(this.encryptionKey, blob, ownerOf('state', sha256Hex(state)))) as PendingAuthorization;
    } catch (error) {
      if (error instanceof SealedBoxError) return undefined;
      throw error;
    }
  }

  async readClient(server: UpstreamOAuthServer): Promise<OAuthClientInformationMixed | undefined> {
    const blob = await this.redis.get(this.keys.client(server.id, server.url));
    if (blob === null) return undefined;
    try {
      return JSON.parse(open(this.encryptionKey, blob, ownerOf('client', server.id, server.url))) as OAuthClientInformationMixed;
    } catch (error) {
      if (error instanceof SealedBoxError) return undefined;
      throw error;
    }
  }

  async writeClient(server: UpstreamOAuthServer, information: OAuthClientInformationMixed): Promise<void> {
    await this.redis.set(
      this.keys.client(server.id, server.url),
      seal(this.encryptionKey, JSON.stringify(information), ownerOf('client', server.id, server.url)),
    );
  }

  async deleteClient(server: UpstreamOAuthServer): Promise<void> {
    await this.redis.del(this.keys.client(server.id, server.url));
  }

  async readDiscovery(server: Pick<UpstreamOAuthServer, 'id' | 'url'>): Promise<OAuthDiscoveryState | undefined> {
    const text = await this.redis.get(this.keys.discovery(server.id, server.url));
    return text === null ? undefined : (JSON.parse(text) as OAuthDiscoveryState);
  }

  async writeDiscovery(server: UpstreamOAuthServer, state: OAuthDiscoveryState): Promise<void> {
    await this.redis.set(this.keys.discovery(server.id, server.url), JSON.stringify(state), 'EX', DISCOVERY_TTL_SECONDS);
  }

  async deleteDiscovery(server: UpstreamOAuthServer): Promise<void> {
    await this.redis.del(this.keys.discovery(server.id, server.url));
  }
}

function validateServer(server: UpstreamOAuthServer): void {
  if (typeof server?.id !== 'string' || server.id === '') throw new UpstreamOAuthError('invalid_server', 'the MCP server has no id');
  let url: URL;
  try {
    url = new URL(server.url);
  } catch {
    throw new UpstreamOAuthError('invalid_server', `the MCP server "${server.id}" has no valid URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new UpstreamOAuthError('invalid_server', `the MCP server "${server.id}" URL must be http(s)`);
}

function isFresh(record: TokenRecord, now: number): boolean {
  return record.expiresAtMs === undefined || now < record.expiresAtMs - REFRESH_BEFORE_EXPIRY_MS;
}

function bearer(record: TokenRecord): Record<string, string> {
  // OAuth 2.1 and MCP's authorization spec: the access token goes as a Bearer credential, whatever
  // casing the server gave token_type.
  return { Authorization: `Bearer ${record.tokens.access_token}` };
}

/** An OAuth error code worth passing on: the registered codes' shape, never free text. */
function oauthCode(error: unknown): string | undefined {
  const code = error instanceof OAuthError ? error.errorCode : typeof error === 'string' ? error : undefined;
  return code && /^[a-z_]{1,64}$/.test(code) ? code : undefined;
}

/**
 * A fetch that times requests out and notes whether the authorization server failed rather than
 * refused (unreachable, 5xx, 429): a failure keeps the stored token, a refusal removes it.
 */
function observedFetch(base: typeof fetch, timeoutMs: number): { fetch: typeof fetch; failed: () => boolean } {
  let failed = false;
  const observed = (async (input: string | URL | Request, init?: RequestInit) => {
    try {
      const response = await base(input, { ...init, signal: init?.signal ?? AbortSignal.timeout(timeoutMs) });
      // Too many requests is the server's state, not a verdict on the token.
      if (response.status >= 500 || response.status === 429) failed = true;
      return response;
    } catch (error) {
      failed = true;
      throw error;
    }
  }) as typeof fetch;
  return { fetch: observed, failed: () => failed };
}

/**
 * What a failed authorization step (the start, or the code's exchange) throws: the store's own
 * failure as it is; `upstream_unavailable` when the authorization server could not be reached or
 * failed; otherwise `authorization_failed`, naming what the server refused, with its OAuth code.
 */
function authorizationFailure(
  error: unknown,
  provider: StoredSessionProvider,
  observed: { failed: () => boolean },
  server: UpstreamOAuthServer,
  refused: string,
): unknown {
  if (provider.storeFailure) return provider.storeFailure;
  if (observed.failed() || !(error instanceof OAuthError) || error instanceof ServerError) {
    return new UpstreamOAuthError('upstream_unavailable', `the authorization server of the MCP server "${server.id}" could not be reached or failed`);
  }
  return new UpstreamOAuthError('authorization_failed', `the authorization server of the MCP server "${server.id}" refused ${refused}`, oauthCode(error));
}

/** The per-gateway-key OAuth credentials of upstream MCP servers (see the module's comment). */
export class UpstreamCredentials {
  private readonly store: CredentialStore;
  private readonly baseFetch: typeof fetch;
  private readonly requestTimeoutMs: number;
  /** Refreshes in flight in this process, by key and server: concurrent callers share one. */
  private readonly refreshing = new Map<string, Promise<Record<string, string> | undefined>>();

  constructor(options: UpstreamCredentialsOptions) {
    assertCredentialsKey(options.encryptionKey);
    try {
      const redirect = new URL(options.redirectUri);
      if (redirect.protocol !== 'https:' && redirect.protocol !== 'http:') throw new Error();
    } catch {
      throw new Error('the OAuth redirect URI must be an absolute http(s) URL');
    }
    this.store = new CredentialStore({
      redis: options.redis,
      prefix: options.prefix,
      encryptionKey: options.encryptionKey,
      redirectUri: options.redirectUri,
      clientName: options.clientName ?? 'LLM gateway',
      now: options.now ?? Date.now,
    });
    this.baseFetch = options.fetch ?? fetch;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  }

  /**
   * The Authorization header for this key on this server, refreshed first when it expires within
   * 30 s; undefined when the key has no valid token (never had one, it was revoked, or the
   * authorization server refused its refresh): the caller then answers with authorizationUrl().
   * Rejects with `upstream_unavailable` when a refresh could not reach the authorization server
   * (the token is kept for the next try). Concurrent calls for one key and server refresh once,
   * across replicas too (a lock in Redis).
   */
  async headersFor(keyId: string, server: UpstreamOAuthServer): Promise<Record<string, string> | undefined> {
    validateServer(server);
    const record = await this.store.readTokens(keyId, server.id);
    // A token issued for another URL is never presented to this one (the operator moved the id).
    if (!record || record.serverUrl !== server.url) return undefined;
    if (isFresh(record, this.store.now())) return bearer(record);
    return this.refreshOnce(keyId, server, record, (stored) => isFresh(stored, this.store.now()), '');
  }

  /**
   * After the server answered 401 to `rejected` (the headers headersFor gave): the key's token,
   * refreshed now if it is still the rejected one (the server revoked it before its expiry), or the
   * one another call has put in its place meanwhile; undefined when there is none (as headersFor).
   * Concurrent calls after one rejection refresh once.
   */
  async headersAfterRejection(keyId: string, server: UpstreamOAuthServer, rejected: Record<string, string>): Promise<Record<string, string> | undefined> {
    validateServer(server);
    const record = await this.store.readTokens(keyId, server.id);
    if (!record || record.serverUrl !== server.url) return undefined;
    const rejectedAuthorization = rejected.Authorization ?? rejected.authorization ?? '';
    const replaced = (stored: TokenRecord) => isFresh(stored, this.store.now()) && bearer(stored).Authorization !== rejectedAuthorization;
    if (replaced(record)) return bearer(record);
    return this.refreshOnce(keyId, server, record, replaced, sha256Hex(rejectedAuthorization));
  }

  /** One refresh per key, server and reason in this process; callers meanwhile share its result. */
  private refreshOnce(
    keyId: string,
    server: UpstreamOAuthServer,
    record: TokenRecord,
    usable: (stored: TokenRecord) => boolean,
    reason: string,
  ): Promise<Record<string, string> | undefined> {
    if (!record.tokens.refresh_token) return this.store.deleteTokens(keyId, server.id).then(() => undefined);
    const flight = JSON.stringify([keyId, server.id, reason]);
    let refresh = this.refreshing.get(flight);
    if (!refresh) {
      refresh = this.refreshAcrossReplicas(keyId, server, usable).finally(() => this.refreshing.delete(flight));
      this.refreshing.set(flight, refresh);
    }
    return refresh;
  }

  /** Refreshes under a Redis lock, or waits for the replica that holds it and reads its result. */
  private async refreshAcrossReplicas(
    keyId: string,
    server: UpstreamOAuthServer,
    usable: (stored: TokenRecord) => boolean,
  ): Promise<Record<string, string> | undefined> {
    const lock = this.store.keys.refreshLock(keyId, server.id);
    const owner = randomBytes(16).toString('hex');
    const deadline = Date.now() + REFRESH_LOCK_MS;
    for (;;) {
      if ((await this.store.redis.set(lock, owner, 'PX', REFRESH_LOCK_MS, 'NX')) === 'OK') {
        try {
          return await this.refreshHoldingLock(keyId, server, usable);
        } finally {
          await this.store.redis.eval(RELEASE_LOCK, 1, lock, owner);
        }
      }
      await new Promise((resolve) => setTimeout(resolve, REFRESH_POLL_MS));
      const record = await this.store.readTokens(keyId, server.id);
      if (!record || record.serverUrl !== server.url) return undefined;
      if (usable(record)) return bearer(record);
      if (Date.now() > deadline)
        throw new UpstreamOAuthError('upstream_unavailable', `the token refresh for the MCP server "${server.id}" did not finish in time`);
    }
  }

  private async refreshHoldingLock(
    keyId: string,
    server: UpstreamOAuthServer,
    usable: (stored: TokenRecord) => boolean,
  ): Promise<Record<string, string> | undefined> {
    // Another replica may have refreshed between our read and our lock.
    const record = await this.store.readTokens(keyId, server.id);
    if (!record || record.serverUrl !== server.url) return undefined;
    if (usable(record)) return bearer(record);
    if (!record.tokens.refresh_token) {
      await this.store.deleteTokens(keyId, server.id);
      return undefined;
    }
    const provider = new StoredSessionProvider(this.store, keyId, server, { kind: 'refresh', tokens: record.tokens });
    const observed = observedFetch(this.baseFetch, this.requestTimeoutMs);
    let result: 'AUTHORIZED' | 'REDIRECT';
    try {
      result = await auth(provider, { serverUrl: server.url, ...this.scope(server), fetchFn: observed.fetch });
    } catch (error) {
      if (provider.storeFailure) throw provider.storeFailure;
      if (observed.failed() || !(error instanceof OAuthError) || error instanceof ServerError) {
        throw new UpstreamOAuthError('upstream_unavailable', `the authorization server of the MCP server "${server.id}" could not refresh the token`);
      }
      await this.store.deleteTokens(keyId, server.id);
      return undefined;
    }
    if (result === 'AUTHORIZED' && provider.saved) return bearer(provider.saved);
    if (provider.discarded) {
      // Revoked while the refresh was on its way: what it brought is revoked too.
      await this.revokeUpstream(server.id, provider.discarded).catch(() => undefined);
      return undefined;
    }
    // auth() fell through to a new authorization: the refresh was refused, or failed on the way.
    if (observed.failed()) {
      throw new UpstreamOAuthError('upstream_unavailable', `the authorization server of the MCP server "${server.id}" could not refresh the token`);
    }
    await this.store.deleteTokens(keyId, server.id);
    return undefined;
  }

  private scope(server: UpstreamOAuthServer): { scope?: string } {
    // The operator's scopes win over those the server's metadata lists (auth()'s `scope` comes first).
    return server.scopes?.length ? { scope: server.scopes.join(' ') } : {};
  }

  /**
   * Starts the flow for this key on this server: discovers the server's authorization server,
   * registers the gateway there when it has no client yet, and returns the URL the user opens. Its
   * state is random (256 bits), bound to this key and server, single use and valid ten minutes.
   */
  async authorizationUrl(keyId: string, server: UpstreamOAuthServer): Promise<URL> {
    validateServer(server);
    if (typeof keyId !== 'string' || keyId === '') throw new UpstreamOAuthError('invalid_request', 'no gateway key to authorize');
    const state = randomBytes(32).toString('base64url');
    const provider = new StoredSessionProvider(this.store, keyId, server, { kind: 'start', state });
    const observed = observedFetch(this.baseFetch, this.requestTimeoutMs);
    try {
      await auth(provider, { serverUrl: server.url, ...this.scope(server), fetchFn: observed.fetch });
    } catch (error) {
      throw authorizationFailure(error, provider, observed, server, "the gateway's client");
    }
    if (!provider.authorizationUrl || !provider.generatedCodeVerifier) {
      throw new UpstreamOAuthError('authorization_failed', `the MCP server "${server.id}" did not start an authorization`);
    }
    await this.store.writePending(state, { keyId, server, codeVerifier: provider.generatedCodeVerifier });
    return provider.authorizationUrl;
  }

  /**
   * The callback (`?code&state`, or `?error&state`): takes the state (once; a replay, an unknown or
   * an expired state is `invalid_state`), exchanges the code with the state's PKCE verifier and
   * stores the tokens for the state's key, whichever key the caller holds.
   */
  async complete(query: { code?: string; state?: string; error?: string }): Promise<{ keyId: string; serverId: string }> {
    const state = typeof query?.state === 'string' ? query.state : '';
    if (state === '' || state.length > 512) throw new UpstreamOAuthError('invalid_state', 'the authorization callback has no valid state');
    const pending = await this.store.takePending(state);
    if (!pending) throw new UpstreamOAuthError('invalid_state', 'the authorization is unknown, expired or already completed');
    const { keyId, server } = pending;
    if (query.error !== undefined) {
      throw new UpstreamOAuthError('authorization_denied', `the authorization for the MCP server "${server.id}" was declined`, oauthCode(query.error));
    }
    if (typeof query.code !== 'string' || query.code === '') throw new UpstreamOAuthError('invalid_request', 'the authorization callback has no code');
    const provider = new StoredSessionProvider(this.store, keyId, server, { kind: 'complete', codeVerifier: pending.codeVerifier });
    const observed = observedFetch(this.baseFetch, this.requestTimeoutMs);
    try {
      await auth(provider, { serverUrl: server.url, authorizationCode: query.code, ...this.scope(server), fetchFn: observed.fetch });
    } catch (error) {
      throw authorizationFailure(error, provider, observed, server, 'the authorization code');
    }
    if (!provider.saved) throw new UpstreamOAuthError('authorization_failed', `the MCP server "${server.id}" issued no token`);
    return { keyId, serverId: server.id };
  }

  /**
   * Removes the key's token for the server, then asks the authorization server to revoke it
   * (RFC 7009) when its metadata names a revocation endpoint: the refresh token first (which ends
   * the grant), then the access token. Revocation upstream is best effort: the token is gone from
   * the gateway whatever the authorization server answers.
   */
  async revoke(keyId: string, serverId: string): Promise<void> {
    const name = this.store.keys.tokens(keyId);
    const blob = await this.store.redis.hget(name, serverId);
    await this.store.redis.hdel(name, serverId);
    const record = blob === null ? undefined : this.store.openTokens(keyId, serverId, blob);
    if (!record) return;
    try {
      await this.revokeUpstream(serverId, record);
    } catch {
      // Best effort (see above); the reason may hold the server's answer, so it goes nowhere.
    }
  }

  private async revokeUpstream(serverId: string, record: TokenRecord): Promise<void> {
    const { fetch: fetchFn } = observedFetch(this.baseFetch, this.requestTimeoutMs);
    const cached = await this.store.readDiscovery({ id: serverId, url: record.serverUrl });
    const metadata: AuthorizationServerMetadata | undefined =
      cached?.authorizationServerMetadata ?? (await discoverOAuthServerInfo(record.serverUrl, { fetchFn })).authorizationServerMetadata;
    // OAuth (RFC 8414) metadata names these; OpenID Connect discovery's type does not, though servers send them.
    const revocation = metadata as
      | (AuthorizationServerMetadata & { revocation_endpoint?: string; revocation_endpoint_auth_methods_supported?: string[] })
      | undefined;
    const endpoint = revocation?.revocation_endpoint;
    if (!revocation || !endpoint || !record.client) return;
    const methods = revocation.revocation_endpoint_auth_methods_supported ?? revocation.token_endpoint_auth_methods_supported ?? [];
    const method = selectClientAuthMethod(record.client, methods);
    const revocations: Array<[string, string]> = [];
    if (record.tokens.refresh_token) revocations.push([record.tokens.refresh_token, 'refresh_token']);
    revocations.push([record.tokens.access_token, 'access_token']);
    for (const [token, hint] of revocations) {
      const headers = new Headers({ 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' });
      const body = new URLSearchParams({ token, token_type_hint: hint });
      const { client_id: clientId, client_secret: clientSecret } = record.client;
      if (method === 'client_secret_basic' && clientSecret) {
        // As the SDK authenticates to the token endpoint, so that a server accepting one accepts both.
        headers.set('Authorization', `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`);
      } else {
        body.set('client_id', clientId);
        if (method === 'client_secret_post' && clientSecret) body.set('client_secret', clientSecret);
      }
      const response = await fetchFn(endpoint, { method: 'POST', headers, body });
      await response.body?.cancel();
    }
  }

  /** Every server id the key holds a token for, with its expiry (never the token), by server id. */
  async list(keyId: string): Promise<Array<{ serverId: string; expiresAtMs?: number }>> {
    const stored = await this.store.redis.hgetall(this.store.keys.tokens(keyId));
    const held: Array<{ serverId: string; expiresAtMs?: number }> = [];
    for (const [serverId, blob] of Object.entries(stored)) {
      const record = this.store.openTokens(keyId, serverId, blob);
      if (record) held.push({ serverId, ...(record.expiresAtMs !== undefined ? { expiresAtMs: record.expiresAtMs } : {}) });
    }
    return held.sort((a, b) => (a.serverId < b.serverId ? -1 : a.serverId > b.serverId ? 1 : 0));
  }
}
