/**
 * What keeps a replica's semantic index in step with the cache's Redis, on a connection of its own
 * (a duplicate of the entries' client, whose command timeout outlasts a blocking read): first a
 * rebuild, every vector key read again (SCAN on every master, the values read in pipelines), then
 * the stream tailed with XREAD BLOCK from where the rebuild began, each announcement taken into the
 * index. A stream found trimmed past what was read (a replica far behind, the stream evicted) and
 * a Redis that stopped answering both lead to a rebuild once it answers again, which also drops
 * what the index holds from before that Redis no longer has. Expired vectors are pruned each
 * PRUNE_INTERVAL_MS. Nothing here fails a call: meanwhile the index answers with what it holds,
 * and a hit still needs its entry read.
 */
import type { Logger } from '@gateway/logger';
import { isCluster, masters, type Redis, type RedisClient } from '@gateway/redis';
import type { Member } from './vector-group.js';
import type { SemanticIndex } from './semantic-index.js';
import { isAfter, parseVectorKey, readAnnouncement, readVectorValue, streamKey, vectorPattern } from './semantic-keys.js';

/** How long one XREAD blocks waiting for an announcement (ms). */
const BLOCK_MS = 2_000;
/** How many announcements one XREAD takes, and how many keys one SCAN step asks for. */
const BATCH = 512;
/** How long a connection may take to come up before a try counts as failed (ms). */
const READY_TIMEOUT_MS = 2_000;
/** How often expired vectors are pruned (ms). */
const PRUNE_INTERVAL_MS = 60_000;

/** What the tail is started with. */
export interface SemanticTailOptions {
  prefix: string;
  logger: Logger;
  /** How long start() waits for the first rebuild at most (ms). */
  startWaitMs?: number;
}

/** A client like `redis` on a connection of its own, for a blocking read. */
function dedicated(redis: RedisClient): RedisClient {
  const commandTimeout = BLOCK_MS + 2_000;
  if (isCluster(redis)) return redis.duplicate([], { redisOptions: { ...redis.options.redisOptions, commandTimeout } });
  return redis.duplicate({ commandTimeout });
}

/** Resolves once `client` is connected; rejects after `timeoutMs`, or once `signal` aborts. */
function ready(client: RedisClient, timeoutMs: number, signal: AbortSignal): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const settle = (error?: Error) => {
      clearTimeout(timer);
      client.off('ready', connected);
      signal.removeEventListener('abort', stopped);
      if (error) reject(error);
      else resolve();
    };
    const connected = () => settle();
    const stopped = () => settle(new Error('the semantic index stopped'));
    const timer = setTimeout(() => settle(new Error("the cache's Redis is not connected")), timeoutMs);
    client.once('ready', connected);
    signal.addEventListener('abort', stopped);
    if (signal.aborted) stopped();
  });
}

/**
 * What `command` resolves, or a rejection as soon as `signal` aborts: a command sent just before
 * Redis went away may wait for its timeout, which a shutdown does not.
 */
function unlessStopped<T>(command: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const stopped = () => reject(new Error('the semantic index stopped'));
    if (signal.aborted) stopped();
    signal.addEventListener('abort', stopped, { once: true });
    command.then(
      (value) => {
        signal.removeEventListener('abort', stopped);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', stopped);
        reject(error);
      },
    );
  });
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done);
    if (signal.aborted) done();
  });
}

/** Keeps one replica's semantic index in step with the cache's Redis. */
export class SemanticTail {
  private connection: RedisClient | undefined;
  private running = false;
  private lastId = '0-0';
  private needsRebuild = true;
  private loop: Promise<void> | undefined;
  private pruneTimer: NodeJS.Timeout | undefined;
  private readonly stopping = new AbortController();
  private firstRebuild: (() => void) | undefined;
  /** Rebuilds done since start. */
  rebuilds = 0;

  constructor(
    private readonly redis: RedisClient,
    private readonly index: SemanticIndex,
    private readonly options: SemanticTailOptions,
  ) {}

  /** Starts the tail; resolves after its first rebuild, or that rebuild's failure, or `startWaitMs`. */
  start(): Promise<void> {
    if (this.running) return Promise.resolve();
    this.running = true;
    this.connection = dedicated(this.redis);
    this.connection.on('error', () => {}); // the entries' client logs the same outage
    // A read sent again after a reconnect may go on, but what Redis holds may have changed meanwhile.
    this.connection.on('close', () => {
      this.needsRebuild = true;
    });
    const first = new Promise<void>((resolve) => {
      this.firstRebuild = resolve;
      setTimeout(resolve, this.options.startWaitMs ?? 5_000).unref();
    });
    this.loop = this.run();
    this.pruneTimer = setInterval(() => this.index.prune(), PRUNE_INTERVAL_MS).unref();
    return first;
  }

  /** Stops the tail and closes its connection; resolves once its loop ended. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    clearInterval(this.pruneTimer);
    this.stopping.abort();
    this.connection?.disconnect();
    await this.loop;
  }

  private unlessStopped<T>(command: Promise<T>): Promise<T> {
    return unlessStopped(command, this.stopping.signal);
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (this.running) {
      try {
        await ready(this.connection!, READY_TIMEOUT_MS, this.stopping.signal);
        if (this.needsRebuild) await this.rebuild();
        await this.follow();
        failures = 0;
      } catch (error) {
        if (!this.running) return;
        this.needsRebuild = true;
        this.firstRebuild?.();
        if (failures++ === 0)
          this.options.logger.warn({ err: { message: (error as Error).message } }, "semantic index: the cache's Redis did not answer; rebuilding once it does");
        await pause(Math.min(100 * 2 ** failures, 2_000), this.stopping.signal);
      }
    }
  }

  /** Reads every vector key again; the stream is then read from where it stood before. */
  private async rebuild(): Promise<void> {
    const connection = this.connection!;
    const startedAtMs = Date.now();
    const newest = await this.unlessStopped(connection.xrevrange(streamKey(this.options.prefix), '+', '-', 'COUNT', 1));
    const seen = new WeakSet<Member>();
    let read = 0;
    for (const node of masters(connection)) read += await this.readNode(node, seen);
    const gone = this.index.dropUnseen(seen, startedAtMs);
    this.lastId = newest[0]?.[0] ?? '0-0';
    this.needsRebuild = false;
    this.rebuilds++;
    this.options.logger.info({ read, gone, vectors: this.index.vectors, bytes: this.index.bytes }, "semantic index read from the cache's Redis");
    this.firstRebuild?.();
  }

  /** Reads the vector keys of one master into the index; resolves how many it read. */
  private async readNode(node: Redis, seen: WeakSet<Member>): Promise<number> {
    const { prefix } = this.options;
    let cursor = '0';
    let read = 0;
    do {
      const [next, names] = await this.unlessStopped(node.scan(cursor, 'MATCH', vectorPattern(prefix), 'COUNT', BATCH));
      cursor = next;
      if (names.length === 0) continue;
      const pipeline = node.pipeline();
      for (const name of names) pipeline.getBuffer(name).pttl(name);
      const replies = (await this.unlessStopped(pipeline.exec())) ?? [];
      const nowMs = Date.now();
      names.forEach((name, index) => {
        const [value, ttl] = [replies[index * 2]?.[1] as Buffer | null, Number(replies[index * 2 + 1]?.[1])];
        const parsed = parseVectorKey(prefix, name);
        const vector = value && readVectorValue(value);
        if (!parsed || !vector || !(ttl > 0)) return;
        this.index.add({ ...parsed, ...vector, expiresAtMs: nowMs + ttl }, nowMs);
        const held = this.index.get(parsed.group, parsed.key);
        if (held) seen.add(held);
        read++;
      });
    } while (cursor !== '0' && this.running);
    return read;
  }

  /** One blocking read of the stream; a stream trimmed past where it began calls for a rebuild. */
  private async follow(): Promise<void> {
    const connection = this.connection!;
    const stream = streamKey(this.options.prefix);
    const from = this.lastId;
    const reply = await this.unlessStopped(connection.xreadBuffer('COUNT', BATCH, 'BLOCK', BLOCK_MS, 'STREAMS', stream, from));
    const nowMs = Date.now();
    for (const [, entries] of reply ?? [])
      for (const [id, fields] of entries) {
        const kept = readAnnouncement(fields);
        if (kept) this.index.add(kept, nowMs);
        this.lastId = id.toString();
      }
    if (from === '0-0') return;
    // Trimming takes the oldest first: if `from` itself is gone, so may be what came after it.
    const [oldest] = await this.unlessStopped(connection.xrange(stream, '-', '+', 'COUNT', 1));
    if (!oldest || isAfter(oldest[0], from)) this.needsRebuild = true;
  }
}
