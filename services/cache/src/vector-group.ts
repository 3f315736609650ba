/**
 * One group of the semantic index: the kept questions that may answer each other (the same scope,
 * generations, model, embedding model, context and dimensions), and the search for the nearest
 * one. A small group is searched by brute force (a dot product with each); one that grows past
 * `annAt` vectors also gets an HNSW index (usearch), built a slice at a time, whose candidates are
 * scored again exactly, so the similarity reported is the same either way. The index goes when the group shrinks to half of
 * that again, and is built anew once it has marked as many removed members as it holds.
 */
import { Index, MetricKind, ScalarKind } from 'usearch';
import { dot } from './vectors.js';

/** One kept question: its entry's key and its normalized vector. */
export interface Member {
  readonly key: string;
  readonly vector: Float32Array;
  readonly storedAtMs: number;
  readonly expiresAtMs: number;
  /** Its key in the group's HNSW index, unique in the process. */
  readonly label: bigint;
}

/** The nearest member a search found, with its cosine similarity to the query. */
export interface Nearest {
  member: Member;
  similarity: number;
}

/** The bytes a member costs beyond its vector: its object, key and map slots, as an estimate. */
const MEMBER_OVERHEAD = 192;
/** The bytes a member costs in the HNSW index beyond its vector's copy there: its links and key. */
const ANN_OVERHEAD = 192;
/** The HNSW graph's links per node (usearch's `connectivity`). */
const CONNECTIVITY = 16;
/** How many candidates the HNSW index gives a search, each scored again exactly. */
const CANDIDATES = 16;
/** How wide the HNSW index searches (usearch's `expansion_search`): wider finds the nearest more surely. */
const EXPANSION_SEARCH = 128;
/** How many floats of vectors one slice of an HNSW build adds (about 5 ms of work). */
const BUILD_SLICE_FLOATS = 32_768;

/** The bytes a member of `dimensions` costs in a group searched by brute force. */
export function memberBytes(dimensions: number, key: string): number {
  return dimensions * 4 + key.length + MEMBER_OVERHEAD;
}

/** The kept questions of one group and their search. */
export class VectorGroup {
  readonly members = new Map<string, Member>();
  private ann: { index: Index; byLabel: Map<bigint, Member>; removed: number; built: boolean } | undefined;
  private memberBytes = 0;

  constructor(
    readonly dimensions: number,
    private readonly annAt: number,
  ) {}

  /** What the group holds in memory, in bytes (its vectors, and its HNSW index when it has one). */
  get bytes(): number {
    return this.memberBytes + (this.ann ? this.members.size * (this.dimensions * 4 + ANN_OVERHEAD) : 0);
  }

  /** Whether searches go through the HNSW index (built, not being built). */
  get searchedByAnn(): boolean {
    return this.ann?.built === true;
  }

  /** Adds a member, replacing the one of the same key. */
  add(member: Member): void {
    const previous = this.members.get(member.key);
    if (previous) this.remove(previous);
    this.members.set(member.key, member);
    this.memberBytes += memberBytes(this.dimensions, member.key);
    if (this.ann) this.annAdd(member);
    else if (this.members.size > this.annAt) this.buildAnn();
  }

  /** Removes a member, if it is still the group's one of its key; true when it was. */
  remove(member: Member): boolean {
    if (this.members.get(member.key) !== member) return false;
    this.members.delete(member.key);
    this.memberBytes -= memberBytes(this.dimensions, member.key);
    if (this.ann) {
      if (this.ann.byLabel.delete(member.label)) this.ann.index.remove(member.label);
      // HNSW marks a removed node rather than freeing it: past as many removed as held, build it anew.
      if (this.members.size < this.annAt / 2) this.ann = undefined;
      else if (++this.ann.removed > this.members.size) this.buildAnn();
    }
    return true;
  }

  /** The member nearest `query` (normalized, of the group's dimensions) among those `live` accepts. */
  nearest(query: Float32Array, live: (member: Member) => boolean): Nearest | undefined {
    if (query.length !== this.dimensions || this.members.size === 0) return undefined;
    return (this.ann?.built && this.nearestByAnn(query, live)) || this.nearestByBruteForce(query, live);
  }

  /** The nearest by a dot product with every member. */
  nearestByBruteForce(query: Float32Array, live: (member: Member) => boolean): Nearest | undefined {
    let best: Nearest | undefined;
    for (const member of this.members.values()) {
      const similarity = dot(query, member.vector);
      if ((!best || similarity > best.similarity) && live(member)) best = { member, similarity };
    }
    return best;
  }

  /** The nearest of the HNSW index's candidates, scored exactly; undefined when none is live. */
  private nearestByAnn(query: Float32Array, live: (member: Member) => boolean): Nearest | undefined {
    const ann = this.ann!;
    const { keys } = ann.index.search(query, Math.min(CANDIDATES, this.members.size), 1);
    let best: Nearest | undefined;
    for (const label of keys) {
      const member = ann.byLabel.get(label);
      if (!member) continue;
      const similarity = dot(query, member.vector);
      if ((!best || similarity > best.similarity) && live(member)) best = { member, similarity };
    }
    return best;
  }

  /**
   * Builds the HNSW index a slice at a time (an add of a large vector takes a fraction of a
   * millisecond, a thousand of them would hold the event loop for a lookup's deadline), brute
   * force answering meanwhile; members added meanwhile go in at once.
   */
  private buildAnn(): void {
    const index = new Index({
      dimensions: this.dimensions,
      metric: MetricKind.Cos,
      quantization: ScalarKind.F32,
      connectivity: CONNECTIVITY,
      expansion_add: 0,
      expansion_search: EXPANSION_SEARCH,
      multi: false,
    });
    const ann = { index, byLabel: new Map<bigint, Member>(), removed: 0, built: false };
    this.ann = ann;
    const waiting = [...this.members.values()];
    const slice = Math.max(1, Math.floor(BUILD_SLICE_FLOATS / this.dimensions));
    const step = () => {
      if (this.ann !== ann) return; // dropped or built anew meanwhile
      for (const member of waiting.splice(0, slice)) if (this.members.get(member.key) === member && !ann.byLabel.has(member.label)) this.annAdd(member);
      if (waiting.length > 0) setImmediate(step);
      else ann.built = true;
    };
    step();
  }

  private annAdd(member: Member): void {
    this.ann!.index.add(member.label, member.vector);
    this.ann!.byLabel.set(member.label, member);
  }
}
