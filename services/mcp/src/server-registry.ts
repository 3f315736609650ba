/**
 * The upstream MCP servers the operator declared, in Redis so that every replica serves the same
 * set: `<prefix>{servers}` is a hash name -> JSON of a StoredServer (headers sealed by SecretCipher),
 * `<prefix>{servers}:version` a counter (one slot, so a change and its bump are one MULTI on a Redis Cluster) bumped by each change. Each replica reads the counter every
 * MCP_RELOAD_INTERVAL_MS and the hash when it moved, so a change made through any replica (the
 * admin API reaches one) is served by all within that interval.
 */
import { GatewayError } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import type { RedisClient } from '@gateway/redis';
import type { SecretCipher } from '@gateway/redis';

/** How a server is reached. */
export type UpstreamTransport = 'streamable_http' | 'sse';

/** An upstream server as stored; its headers only sealed. */
export interface StoredServer {
  name: string;
  url: string;
  transport: UpstreamTransport;
  /** `oauth`: per-key credentials from UpstreamCredentials. */
  auth: 'none' | 'oauth';
  description: string;
  header_names: string[];
  /** The sealed headers; '' for none. */
  headers_sealed: string;
  /** With `auth: oauth`: the OAuth client, its secret sealed ('' for none). */
  oauth?: { client_id: string; scopes: string[]; client_secret_sealed: string };
  updated_at_ms: number;
}

/** A server with its headers opened, what the pool connects with. */
export interface UpstreamServer extends Omit<StoredServer, 'headers_sealed' | 'oauth'> {
  headers: Record<string, string>;
  /** With `auth: oauth`: the OAuth client, its secret opened. */
  oauth?: { clientId: string; clientSecret: string; scopes: string[] };
}

/** What PutServer may set. */
export interface ServerInput {
  name: string;
  url: string;
  transport: UpstreamTransport;
  auth: 'none' | 'oauth';
  description: string;
  /** undefined: keep the stored headers. */
  headers: Record<string, string> | undefined;
  /** With `auth: oauth`: the OAuth client; a client secret of '' keeps the stored one. */
  oauth?: { clientId: string; clientSecret: string; scopes: string[] };
}

/** What a server name looks like: the namespace of its tools, so never "_" (the separator is "__"). */
export const SERVER_NAME_PATTERN = /^[a-z0-9][a-z0-9-]{0,31}$/;
const HEADER_NAME_PATTERN = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/;
/** Headers the transport sets itself, which a server's static headers may not replace. */
const RESERVED_HEADERS = new Set([
  'host',
  'content-type',
  'content-length',
  'accept',
  'mcp-session-id',
  'mcp-protocol-version',
  'connection',
  'transfer-encoding',
]);
const MAX_HEADERS = 20;
const MAX_HEADER_VALUE_LENGTH = 8_192;
const MAX_DESCRIPTION_LENGTH = 500;
const MAX_URL_LENGTH = 2_048;

/** Checks a server as given; throws a GatewayError (invalid_request) naming the field. */
export function validateServer(input: ServerInput): void {
  const invalid = (param: string, message: string) => GatewayError.of('invalid_request', message, { param });
  if (!SERVER_NAME_PATTERN.test(input.name))
    throw invalid('name', 'A server name is 1 to 32 lowercase letters, digits or "-", starting with a letter or digit.');
  let url: URL;
  try {
    url = new URL(input.url);
  } catch {
    throw invalid('url', 'url must be an absolute http or https URL.');
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || input.url.length > MAX_URL_LENGTH)
    throw invalid('url', `url must be an absolute http or https URL of at most ${MAX_URL_LENGTH} characters.`);
  if (url.username || url.password) throw invalid('url', 'url may not carry credentials: put them in headers, which are stored encrypted.');
  const oauth = input.oauth;
  if (oauth && input.auth !== 'oauth') throw invalid('oauth', 'oauth settings need auth oauth.');
  if (oauth && (oauth.clientId.length > 500 || oauth.clientSecret.length > 2_000 || /[\r\n\0]/.test(oauth.clientId + oauth.clientSecret)))
    throw invalid('oauth', 'oauth.client_id has at most 500 characters and oauth.client_secret at most 2000, each on one line.');
  if (oauth && (oauth.scopes.length > 50 || oauth.scopes.some((scope) => !/^[\x21\x23-\x5b\x5d-\x7e]{1,200}$/.test(scope))))
    throw invalid('oauth', 'oauth.scopes is at most 50 scope tokens (printable, no spaces, quotes or backslashes).');
  if (input.description.length > MAX_DESCRIPTION_LENGTH) throw invalid('description', `description has at most ${MAX_DESCRIPTION_LENGTH} characters.`);
  const headers = Object.entries(input.headers ?? {});
  if (headers.length > MAX_HEADERS) throw invalid('headers', `A server has at most ${MAX_HEADERS} headers.`);
  for (const [name, value] of headers) {
    if (!HEADER_NAME_PATTERN.test(name) || RESERVED_HEADERS.has(name.toLowerCase()))
      throw invalid('headers', `"${name.slice(0, 100)}" is not a header name a server may be given.`);
    if (typeof value !== 'string' || value.length > MAX_HEADER_VALUE_LENGTH || /[\r\n\0]/.test(value))
      throw invalid('headers', `The value of the header "${name}" must be at most ${MAX_HEADER_VALUE_LENGTH} characters on one line.`);
  }
}

/** The upstream servers in Redis, with the latest set read kept in memory. */
export class ServerRegistry {
  private servers = new Map<string, UpstreamServer>();
  private version: string | null | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly listeners: ((servers: ReadonlyMap<string, UpstreamServer>) => void)[] = [];

  constructor(
    private readonly redis: RedisClient,
    private readonly cipher: SecretCipher,
    private readonly options: { prefix: string; intervalMs: number; logger: Logger; now?: () => number },
  ) {}

  private get hashName(): string {
    return `${this.options.prefix}{servers}`;
  }

  private get versionName(): string {
    return `${this.options.prefix}{servers}:version`;
  }

  /** The servers as last read, by name. */
  get current(): ReadonlyMap<string, UpstreamServer> {
    return this.servers;
  }

  /** Calls `listener` with the new set after each change read. */
  onChange(listener: (servers: ReadonlyMap<string, UpstreamServer>) => void): void {
    this.listeners.push(listener);
  }

  /** Reads the set once, then looks for changes every interval; resolves after the first read (or its failure, logged). */
  async start(): Promise<void> {
    await this.refresh().catch((error: unknown) => this.options.logger.warn({ err: error }, 'reading the MCP servers failed; retrying'));
    this.timer = setInterval(() => {
      this.refresh().catch((error: unknown) => this.options.logger.warn({ err: error }, 'reading the MCP servers failed; retrying'));
    }, this.options.intervalMs);
    this.timer.unref();
  }

  /** Stops looking for changes. */
  stop(): void {
    clearInterval(this.timer);
  }

  /** Reads the set again when its version moved. */
  async refresh(): Promise<void> {
    const version = await this.redis.get(this.versionName);
    if (version === this.version) return;
    const hash = await this.redis.hgetall(this.hashName);
    const servers = new Map<string, UpstreamServer>();
    for (const [name, json] of Object.entries(hash).sort(([a], [b]) => a.localeCompare(b))) {
      try {
        const stored = JSON.parse(json) as StoredServer;
        const { headers_sealed: sealed, oauth, ...rest } = stored;
        servers.set(name, {
          ...rest,
          headers: sealed ? this.cipher.open(sealed) : {},
          ...(oauth && {
            oauth: {
              clientId: oauth.client_id,
              scopes: oauth.scopes,
              clientSecret: oauth.client_secret_sealed ? (this.cipher.open(oauth.client_secret_sealed).secret ?? '') : '',
            },
          }),
        });
      } catch (error) {
        // A server whose headers cannot be opened (another MCP_SECRETS_KEY) is left out, not sent unauthenticated.
        this.options.logger.error(
          { server: name, err: error instanceof Error ? error.message : String(error) },
          'an MCP server cannot be read; it is not served',
        );
      }
    }
    this.version = version;
    this.servers = servers;
    for (const listener of this.listeners) listener(servers);
  }

  /** Every stored server, by name, without its headers' values. */
  async list(): Promise<StoredServer[]> {
    const hash = await this.redis.hgetall(this.hashName);
    return Object.values(hash)
      .map((json) => JSON.parse(json) as StoredServer)
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /** One stored server, or undefined. */
  async get(name: string): Promise<StoredServer | undefined> {
    if (!SERVER_NAME_PATTERN.test(name)) return undefined;
    const json = await this.redis.hget(this.hashName, name);
    return json ? (JSON.parse(json) as StoredServer) : undefined;
  }

  /** Creates or replaces a server; returns it as stored. */
  async put(input: ServerInput): Promise<StoredServer> {
    validateServer(input);
    let sealed = '';
    let names: string[] = [];
    const before = await this.get(input.name);
    if (input.headers === undefined) {
      sealed = before?.headers_sealed ?? '';
      names = before?.header_names ?? [];
    } else if (Object.keys(input.headers).length > 0) {
      if (!this.cipher.configured)
        throw GatewayError.of('invalid_request', 'This gateway has no MCP_SECRETS_KEY, so it cannot store headers for an MCP server.', { param: 'headers' });
      sealed = this.cipher.seal(input.headers);
      names = Object.keys(input.headers).sort();
    }
    let oauth: StoredServer['oauth'];
    if (input.auth === 'oauth') {
      let secretSealed = input.oauth?.clientSecret ? '' : (before?.oauth?.client_secret_sealed ?? '');
      if (input.oauth?.clientSecret) {
        if (!this.cipher.configured)
          throw GatewayError.of('invalid_request', 'This gateway has no MCP_SECRETS_KEY, so it cannot store an OAuth client secret.', { param: 'oauth' });
        secretSealed = this.cipher.seal({ secret: input.oauth.clientSecret });
      }
      oauth = { client_id: input.oauth?.clientId ?? '', scopes: input.oauth?.scopes ?? [], client_secret_sealed: secretSealed };
    }
    const stored: StoredServer = {
      name: input.name,
      url: input.url,
      transport: input.transport,
      auth: input.auth,
      description: input.description,
      header_names: names,
      headers_sealed: sealed,
      ...(oauth && { oauth }),
      updated_at_ms: (this.options.now ?? Date.now)(),
    };
    await this.redis.multi().hset(this.hashName, input.name, JSON.stringify(stored)).incr(this.versionName).exec();
    await this.refresh();
    return stored;
  }

  /** Removes a server; false when there was none. */
  async delete(name: string): Promise<boolean> {
    if (!SERVER_NAME_PATTERN.test(name)) return false;
    const replies = await this.redis.multi().hdel(this.hashName, name).incr(this.versionName).exec();
    await this.refresh();
    return replies?.[0]?.[1] === 1;
  }
}
