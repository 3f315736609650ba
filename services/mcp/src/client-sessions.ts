/**
 * Client sessions (Mcp-Session-Id) in Redis, so that any replica answers any message of a session:
 * `<prefix>session:<id>` holds the key id that opened it and the protocol version agreed, and
 * expires after MCP_SESSION_TTL_SECONDS without a message. A session belongs to its key: another
 * key presenting its id is told it does not exist.
 */
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '@gateway/redis';

/** A live session. */
export interface ClientSession {
  keyId: string;
  protocolVersion: string;
}

/** What a session id looks like (the gateway draws them). */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9_-]{32}$/;

/** The sessions of every replica, in Redis. */
export class ClientSessions {
  constructor(
    private readonly redis: RedisClient,
    private readonly options: { prefix: string; ttlSeconds: number },
  ) {}

  private name(id: string): string {
    return `${this.options.prefix}session:${id}`;
  }

  /** Opens a session for a key; resolves its id. */
  async open(keyId: string, protocolVersion: string): Promise<string> {
    const id = randomBytes(24).toString('base64url');
    await this.redis.set(this.name(id), JSON.stringify({ keyId, protocolVersion }), 'EX', this.options.ttlSeconds);
    return id;
  }

  /** The key's session with this id, its life extended; undefined when it does not exist, expired or is another key's. */
  async find(id: string, keyId: string): Promise<ClientSession | undefined> {
    if (!SESSION_ID_PATTERN.test(id)) return undefined;
    const json = await this.redis.getex(this.name(id), 'EX', this.options.ttlSeconds);
    if (!json) return undefined;
    const session = JSON.parse(json) as ClientSession;
    return session.keyId === keyId ? session : undefined;
  }

  /** Whether the session still exists (a listener checks it now and then). */
  async exists(id: string): Promise<boolean> {
    return SESSION_ID_PATTERN.test(id) && (await this.redis.exists(this.name(id))) === 1;
  }

  /** Ends the key's session; false when it has no such session. */
  async end(id: string, keyId: string): Promise<boolean> {
    if (!(await this.find(id, keyId))) return false;
    return (await this.redis.del(this.name(id))) === 1;
  }
}
