/**
 * What a Redis does when full, read at start: the gateway's state (keys, limit windows, budgets,
 * metered usage and its de-duplication records) must never be evicted. An evicting policy
 * (anything but `noeviction`; the volatile-* ones too, since limit windows and de-duplication
 * records have a time to live) would reset a key's window, forget a key or its budget, and let an
 * event be metered twice. With `noeviction` a full Redis refuses writes: requests are answered 503
 * with Retry-After until it has room, and nothing is lost.
 */
import type { Redis } from 'ioredis';
import type { Logger } from '@gateway/logger';
import { isCluster, type RedisClient } from './client.js';

/** The one policy that never evicts. */
export const NO_EVICTION = 'noeviction';

/** What one server says of its memory; a field it would not tell is absent. */
export interface RedisMemory {
  /** The server, as host:port. */
  node: string;
  /** maxmemory-policy. */
  policy?: string;
  /** used_memory (bytes). */
  usedBytes?: number;
  /** maxmemory (bytes; 0: no limit). */
  maxBytes?: number;
  /** What Redis leaves out of used memory when it compares it with maxmemory (replication and AOF buffers). */
  notCountedBytes?: number;
}

function nodeName(node: Redis): string {
  return `${node.options.host}:${node.options.port}`;
}

/** The value of one `name:value` line of an INFO reply. */
function infoField(info: string, name: string): string | undefined {
  const match = new RegExp(`^${name}:(.*)$`, 'm').exec(info);
  return match?.[1]?.trim();
}

/**
 * What one server says of its memory: INFO memory (used_memory, maxmemory, maxmemory_policy), and
 * CONFIG GET maxmemory-policy where INFO lacks the policy (older servers). Managed services that
 * disable CONFIG still answer INFO; a server that refuses both tells nothing (no field). Throws
 * only when the server cannot be reached.
 */
export async function readMemory(node: Redis): Promise<RedisMemory> {
  // A server that refuses the command (renamed or disabled) answers an error reply: nothing told.
  const refused = (error: Error) => {
    if (error.name === 'ReplyError') return undefined;
    throw error;
  };
  const info = (await node.info('memory').catch(refused)) ?? '';
  const used = infoField(info, 'used_memory');
  const max = infoField(info, 'maxmemory');
  const notCounted = infoField(info, 'mem_not_counted_for_evict');
  let policy = infoField(info, 'maxmemory_policy');
  if (policy === undefined) {
    const reply = (await node.call('CONFIG', 'GET', 'maxmemory-policy').catch(() => [])) as string[];
    policy = reply[1];
  }
  return {
    node: nodeName(node),
    ...(policy ? { policy } : {}),
    ...(used !== undefined && Number.isFinite(Number(used)) ? { usedBytes: Number(used) } : {}),
    ...(max !== undefined && Number.isFinite(Number(max)) ? { maxBytes: Number(max) } : {}),
    ...(notCounted !== undefined && Number.isFinite(Number(notCounted)) ? { notCountedBytes: Number(notCounted) } : {}),
  };
}

/** The servers to ask: one server's own client, or every master of a cluster. */
function servers(client: RedisClient): Redis[] {
  return isCluster(client) ? client.nodes('master') : [client];
}

/** What every master says of its memory (a cluster: each master; one server: itself). */
export function readMemoryOfMasters(client: RedisClient): Promise<RedisMemory[]> {
  return Promise.all(servers(client).map((node) => readMemory(node)));
}

/** A Redis whose policy may evict the gateway's state: the message says which and how to go on. */
export class EvictingRedisError extends Error {
  constructor(
    readonly node: string,
    readonly policy: string,
  ) {
    super(
      `Redis at ${node} has maxmemory-policy ${policy}: it may evict keys, which resets rate-limit windows, forgets API keys and budgets and meters usage twice. ` +
        "Set maxmemory-policy noeviction on it (redis.conf, CONFIG SET maxmemory-policy noeviction, or your provider's parameter group), " +
        'or set REDIS_ALLOW_EVICTION=true to start anyway.',
    );
    this.name = 'EvictingRedisError';
  }
}

/** Options of checkEvictionPolicy and guardEvictionPolicy. */
export interface EvictionPolicyOptions {
  /** REDIS_ALLOW_EVICTION: an evicting policy is logged, not refused. */
  allowEviction: boolean;
  logger: Logger;
}

/**
 * Reads every master's maxmemory-policy and throws an EvictingRedisError for one that may evict
 * (unless allowed: then it warns). A policy no master would tell (INFO and CONFIG both refused) is
 * logged as unknown and accepted. Rejects when Redis cannot be reached.
 */
export async function checkEvictionPolicy(client: RedisClient, options: EvictionPolicyOptions): Promise<RedisMemory[]> {
  const memories = await readMemoryOfMasters(client);
  for (const memory of memories) {
    if (memory.policy === undefined) {
      options.logger.warn({ node: memory.node }, 'Redis would not tell its maxmemory-policy (INFO and CONFIG refused); make sure it is noeviction');
    } else if (memory.policy !== NO_EVICTION) {
      const error = new EvictingRedisError(memory.node, memory.policy);
      if (!options.allowEviction) throw error;
      options.logger.warn({ node: memory.node, policy: memory.policy }, 'Redis may evict keys; starting anyway as REDIS_ALLOW_EVICTION is true');
    }
  }
  return memories;
}

/** Options of guardEvictionPolicy. */
export interface EvictionGuardOptions extends EvictionPolicyOptions {
  /**
   * Called once with the refusal when a (re)connected Redis may evict; by default the refusal is
   * logged (fatal, naming the server and its policy) and the process exits 1.
   */
  onRefused?: (error: EvictingRedisError) => void;
  /** How long the first check waits for Redis to be reachable before start goes on (ms). */
  waitMs?: number;
}

/**
 * Checks the policy at start and again each time the client (re)connects, since a Redis replaced
 * behind its address may come back configured otherwise. Resolves once the first check is done,
 * or after `waitMs` when Redis cannot be reached yet (the check then runs when it connects), so a
 * service still starts during a Redis outage. A refusal goes to `onRefused`.
 */
export async function guardEvictionPolicy(client: RedisClient, options: EvictionGuardOptions): Promise<void> {
  const onRefused =
    options.onRefused ??
    ((error: EvictingRedisError) => {
      options.logger.fatal({ node: error.node, policy: error.policy }, error.message);
      process.exit(1);
    });
  let refused = false;
  const check = async (): Promise<void> => {
    try {
      await checkEvictionPolicy(client, options);
    } catch (error) {
      if (error instanceof EvictingRedisError) {
        if (!refused) onRefused(error);
        refused = true;
      } else {
        options.logger.warn({ err: { message: (error as Error).message } }, 'reading Redis maxmemory-policy failed; it is checked again when Redis reconnects');
      }
    }
  };
  client.on('ready', () => void check());
  if (client.status !== 'ready') {
    let timer: NodeJS.Timeout | undefined;
    const ready = await Promise.race([
      new Promise<boolean>((resolve) => client.once('ready', () => resolve(true))),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), options.waitMs ?? 5_000);
      }),
    ]);
    clearTimeout(timer);
    // The 'ready' listener above runs the check; a second run here waits for its answer.
    if (!ready) return;
  }
  await check();
}
