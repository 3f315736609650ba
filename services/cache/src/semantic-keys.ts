/**
 * The semantic index's keys in the cache's Redis (CACHE_REDIS_URL), beside the entries:
 *   <prefix>v:<group>:<key>   one string per kept question, with its entry's TTL: 8 bytes of when it
 *                             was stored (Unix ms, float64 little-endian), then its vector as the
 *                             edge sent it (little-endian float32);
 *   <prefix>semantic          a stream announcing each one as it is kept (g: group, k: key, v: the
 *                             value above, x: when it expires, Unix ms), trimmed to about
 *                             STREAM_MAX_LENGTH, which every replica tails.
 * <group> is 32 hex digits of the SHA-256 of everything that must match exactly (scope,
 * generations, model, embedding model, context, dimensions), so a purge, which moves a generation,
 * leaves the old groups unreachable at once; <key> is the entry's, whose name the group's parts
 * give again (entries.ts).
 */
import { createHash } from 'node:crypto';
import type { KeptVector } from './semantic-index.js';
import { unitVector } from './vectors.js';

/** About how many announcements the stream keeps (XADD MAXLEN ~): a replica behind by more reads the keys again. */
export const STREAM_MAX_LENGTH = 4_096;

/** What a vector must share with another to be compared with it. */
export interface GroupParts {
  scope: string;
  /** The entry's generations (entries.ts), as in its name. */
  generations: string;
  modelId: string;
  embeddingModel: string;
  context: string;
  dimensions: number;
}

/** The name of a group: 32 hex digits of the SHA-256 of its parts. */
export function groupName(parts: GroupParts): string {
  const { scope, generations, modelId, embeddingModel, context, dimensions } = parts;
  return createHash('sha256')
    .update(JSON.stringify([scope, generations, modelId, embeddingModel, context, dimensions]))
    .digest('hex')
    .slice(0, 32);
}

/** The Redis key of a kept question's vector. */
export const vectorKey = (prefix: string, group: string, key: string) => `${prefix}v:${group}:${key}`;

/** The SCAN pattern of every vector's key. */
export const vectorPattern = (prefix: string) => `${prefix}v:*`;

/** The Redis key of the stream that announces each vector kept. */
export const streamKey = (prefix: string) => `${prefix}semantic`;

/** The group and key a vector's Redis key names; undefined for another key. */
export function parseVectorKey(prefix: string, name: string): { group: string; key: string } | undefined {
  const start = `${prefix}v:`;
  if (!name.startsWith(start)) return undefined;
  const rest = name.slice(start.length);
  const colon = rest.indexOf(':');
  return colon === 32 && rest.length > 33 ? { group: rest.slice(0, 32), key: rest.slice(33) } : undefined;
}

/** The value of a vector's key: when it was stored, then its bytes. */
export function vectorValue(storedAtMs: number, vector: Uint8Array): Buffer {
  const value = Buffer.alloc(8 + vector.byteLength);
  value.writeDoubleLE(storedAtMs, 0);
  value.set(vector, 8);
  return value;
}

/** A vector key's value read back, its vector normalized; undefined when it is not one. */
export function readVectorValue(value: Buffer): { storedAtMs: number; vector: Float32Array } | undefined {
  if (value.byteLength < 12) return undefined;
  const storedAtMs = value.readDoubleLE(0);
  const vector = unitVector(value.subarray(8));
  return vector && Number.isFinite(storedAtMs) ? { storedAtMs, vector } : undefined;
}

/** The fields of a vector's announcement on the stream. */
export function announcement(group: string, key: string, value: Buffer, expiresAtMs: number): Array<string | Buffer> {
  return ['g', group, 'k', key, 'v', value, 'x', String(expiresAtMs)];
}

/** An announcement read from the stream (its fields as XREAD gives them); undefined when it is not one. */
export function readAnnouncement(fields: readonly Buffer[]): KeptVector | undefined {
  const byName = new Map<string, Buffer>();
  for (let index = 0; index + 1 < fields.length; index += 2) byName.set(fields[index]!.toString(), fields[index + 1]!);
  const [group, key, value, expires] = ['g', 'k', 'v', 'x'].map((name) => byName.get(name));
  const read = value && readVectorValue(value);
  const expiresAtMs = Number(expires?.toString());
  if (group?.byteLength !== 32 || !key?.byteLength || !read || !Number.isFinite(expiresAtMs)) return undefined;
  return { group: group.toString(), key: key.toString(), vector: read.vector, storedAtMs: read.storedAtMs, expiresAtMs };
}

/** Whether stream id `a` comes after `b` (`<ms>-<seq>`). */
export function isAfter(a: string, b: string): boolean {
  const [aMs = 0n, aSeq = 0n] = a.split('-').map(BigInt);
  const [bMs = 0n, bSeq = 0n] = b.split('-').map(BigInt);
  return aMs > bMs || (aMs === bMs && aSeq > bSeq);
}
