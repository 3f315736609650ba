/**
 * The Redis key names of upstream OAuth credentials, under one prefix. Hash tags put what one
 * operation touches together in one Redis Cluster slot: a gateway key's tokens and its refresh
 * locks share the key id's tag (`{<key_id>}`), as auth's keys do (packages/keyspace), and a
 * server's registration and discovery share the server id's. A pending authorization is named by
 * the SHA-256 of its state, never by the state itself.
 */
import { createHash } from 'node:crypto';

/** The names of the credential store's keys under `prefix`. */
export interface UpstreamCredentialKeys {
  readonly prefix: string;
  /** hash: server id -> sealed token record, for one gateway key. */
  tokens(keyId: string): string;
  /** string with a time to live: who is refreshing this key's token on this server. */
  refreshLock(keyId: string, serverId: string): string;
  /** string with a time to live (10 minutes): a pending authorization, sealed, deleted when used. */
  pendingAuthorization(state: string): string;
  /** string: the client registered (RFC 7591) with the server's authorization server, sealed. */
  client(serverId: string, serverUrl: string): string;
  /** string with a time to live: the server's discovered metadata (RFC 9728, RFC 8414), public. */
  discovery(serverId: string, serverUrl: string): string;
}

/** SHA-256 in hex: names a value without revealing it. */
export function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** The key names under `prefix` (e.g. `mcp-oauth:`). */
export function upstreamCredentialKeys(prefix: string): UpstreamCredentialKeys {
  // A server's registration and discovery are named by its URL too: a server id that an operator
  // points at another URL starts afresh instead of presenting one server's client to another.
  const serverTag = (serverId: string, serverUrl: string) => `{${serverId}}:${sha256Hex(serverUrl).slice(0, 16)}`;
  return {
    prefix,
    tokens: (keyId) => `${prefix}tokens:{${keyId}}`,
    refreshLock: (keyId, serverId) => `${prefix}refresh:{${keyId}}:${serverId}`,
    pendingAuthorization: (state) => `${prefix}state:{${sha256Hex(state)}}`,
    client: (serverId, serverUrl) => `${prefix}client:${serverTag(serverId, serverUrl)}`,
    discovery: (serverId, serverUrl) => `${prefix}discovery:${serverTag(serverId, serverUrl)}`,
  };
}
