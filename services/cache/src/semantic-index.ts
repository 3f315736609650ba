/**
 * A replica's semantic index: every kept question's vector it knows of, in memory, by group (the
 * scope, generations, model, embedding model, context and dimensions that must match exactly;
 * semantic-keys.ts names them), each group searched by vector-group.ts. It is bounded by bytes
 * (CACHE_SEMANTIC_MAX_BYTES): past the bound the oldest vectors go first, and a vector older than
 * everything held is not taken in when it is full. A vector past its entry's TTL is passed over
 * by a search and pruned. What it holds is a copy of the vectors in the cache's Redis
 * (semantic-tail.ts fills it); losing one costs a hit, never a wrong answer.
 */
import { OldestFirst } from './oldest-first.js';
import { type Member, memberBytes, type Nearest, VectorGroup } from './vector-group.js';

/** A kept question's vector, as the index takes it in. */
export interface KeptVector {
  /** Its group's name (semantic-keys.ts groupName). */
  group: string;
  /** The key of its entry (the exact request's hash). */
  key: string;
  /** Normalized (vectors.ts unitVector). */
  vector: Float32Array;
  storedAtMs: number;
  expiresAtMs: number;
}

/** Why a vector left the index: the byte bound, its TTL, or its entry gone from Redis. */
export type DropReason = 'bound' | 'expired' | 'gone';

/** The group size past which a group is searched through an HNSW index. */
export const DEFAULT_ANN_AT = 1_024;

interface Held extends Member {
  readonly group: string;
}

/** A vector's place in the age queue: its names, not the vector, so a dropped one holds no memory there. */
interface Place {
  readonly storedAtMs: number;
  readonly group: string;
  readonly key: string;
  readonly label: bigint;
}

/** The vectors this replica can search, bounded by bytes. */
export class SemanticIndex {
  private readonly groups = new Map<string, VectorGroup>();
  private readonly byAge = new OldestFirst<Place>((place) => this.heldAt(place) !== undefined);
  private heldBytes = 0;
  private heldVectors = 0;
  private nextLabel = 1n;
  /** Vectors dropped since start, by reason. */
  readonly dropped: Record<DropReason, number> = { bound: 0, expired: 0, gone: 0 };

  constructor(private readonly options: { maxBytes: number; annAt?: number }) {}

  /** How many vectors are held. */
  get vectors(): number {
    return this.heldVectors;
  }

  /** The bytes they take, as estimated (vectors, their bookkeeping, the HNSW indexes). */
  get bytes(): number {
    return this.heldBytes;
  }

  /** How many groups are searched through an HNSW index. */
  get annGroups(): number {
    let count = 0;
    for (const group of this.groups.values()) if (group.searchedByAnn) count++;
    return count;
  }

  /**
   * Takes a vector in, replacing an older one of the same group and key; false when it is not
   * taken: expired, already held (as new or newer), of another length than its group's, or older
   * than everything held while the index is full.
   */
  add(kept: KeptVector, nowMs = Date.now()): boolean {
    if (kept.expiresAtMs <= nowMs) return false;
    let group = this.groups.get(kept.group);
    const previous = group?.members.get(kept.key);
    if ((previous && previous.storedAtMs >= kept.storedAtMs) || (group && group.dimensions !== kept.vector.length)) return false;
    if (this.heldBytes + memberBytes(kept.vector.length, kept.key) > this.options.maxBytes) {
      const oldest = this.byAge.peek();
      if (!oldest || oldest.storedAtMs >= kept.storedAtMs) {
        this.dropped.bound++;
        return false;
      }
    }
    if (!group) {
      group = new VectorGroup(kept.vector.length, this.options.annAt ?? DEFAULT_ANN_AT);
      this.groups.set(kept.group, group);
    }
    const held: Held = { ...kept, label: this.nextLabel++ };
    this.change(kept.group, group, (target) => target.add(held));
    if (previous) this.byAge.forget();
    else this.heldVectors++;
    this.byAge.push({ storedAtMs: held.storedAtMs, group: held.group, key: held.key, label: held.label });
    this.keepBound();
    return true;
  }

  /** The key and similarity of the live vector of `group` nearest `query` (normalized). */
  nearest(group: string, query: Float32Array, nowMs = Date.now()): { key: string; similarity: number } | undefined {
    const held = this.groups.get(group);
    if (!held) return undefined;
    const expired: Member[] = [];
    const live = (member: Member) => {
      if (member.expiresAtMs > nowMs) return true;
      expired.push(member);
      return false;
    };
    const found: Nearest | undefined = held.nearest(query, live);
    for (const member of expired) this.forget(member as Held, 'expired');
    return found && { key: found.member.key, similarity: found.similarity };
  }

  /** Drops the vector of `group` and `key`, when held (its entry is gone from Redis). */
  remove(group: string, key: string, reason: DropReason = 'gone'): void {
    const held = this.groups.get(group)?.members.get(key);
    if (held) this.forget(held as Held, reason);
  }

  /** The vector held for `group` and `key`: an object that stays the same until it is replaced or dropped. */
  get(group: string, key: string): Member | undefined {
    return this.groups.get(group)?.members.get(key);
  }

  /** Drops every vector past its TTL; resolves how many. */
  prune(nowMs = Date.now()): number {
    return this.dropWhere((member) => member.expiresAtMs <= nowMs, 'expired');
  }

  /**
   * After reading every vector in Redis again: drops those held from before `startedAtMs` that the
   * reading did not find (`seen`: the members it found held), since their keys are gone.
   */
  dropUnseen(seen: WeakSet<Member>, startedAtMs: number): number {
    return this.dropWhere((member) => member.storedAtMs < startedAtMs && !seen.has(member), 'gone');
  }

  private dropWhere(drop: (member: Member) => boolean, reason: DropReason): number {
    const dropped: Held[] = [];
    for (const group of this.groups.values()) for (const member of group.members.values()) if (drop(member)) dropped.push(member as Held);
    for (const held of dropped) this.forget(held, reason);
    return dropped.length;
  }

  /** The vector still held at a place of the age queue, if it is. */
  private heldAt(place: Place): Held | undefined {
    const held = this.groups.get(place.group)?.members.get(place.key);
    return held?.label === place.label ? (held as Held) : undefined;
  }

  /** Runs a change of a group, keeping the bytes in step and dropping the group once empty. */
  private change(name: string, group: VectorGroup, apply: (group: VectorGroup) => void): void {
    const before = group.bytes;
    apply(group);
    this.heldBytes += group.bytes - before;
    if (group.members.size === 0) this.groups.delete(name);
  }

  /** Takes a held vector out of its group; true when it was held. */
  private take(held: Held, reason: DropReason): boolean {
    const group = this.groups.get(held.group);
    if (!group || group.members.get(held.key) !== held) return false;
    this.change(held.group, group, (target) => target.remove(held));
    this.heldVectors--;
    this.dropped[reason]++;
    return true;
  }

  /** Takes a held vector out, leaving its place in the age queue to be passed over. */
  private forget(held: Held, reason: DropReason): void {
    if (this.take(held, reason)) this.byAge.forget();
  }

  private keepBound(): void {
    while (this.heldBytes > this.options.maxBytes) {
      const oldest = this.byAge.pop();
      if (!oldest) return;
      const held = this.heldAt(oldest);
      if (held) this.take(held, 'bound');
    }
  }
}
