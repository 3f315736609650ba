/**
 * The edge's copy of the guard's policy attachments, kept current by the guard's WatchPolicies
 * push, so that whether a request needs the guard is decided without any call: a request no policy
 * applies to pays for a few map lookups and nothing else.
 */
import type { GuardServiceClient, PolicySnapshotOutput, PolicySummaryOutput } from '@gateway/proto';
import type { Logger } from '@gateway/logger';
import { SnapshotWatch } from '../snapshot-watch.js';
import type { AppliedPolicy, GuardPoint } from './guard-context.js';

const POINTS: readonly GuardPoint[] = ['POINT_INPUT', 'POINT_OUTPUT', 'POINT_TOOL_ARGUMENTS', 'POINT_TOOL_RESULT'];

/** Who a request is: what attachments name. */
export interface GuardSubject {
  keyId: string;
  teamId: string;
  /** The catalog model after routing; empty for an MCP call. */
  model: string;
}

/** No policy: shared, so a request no policy applies to allocates nothing. */
const NONE: readonly AppliedPolicy[] = Object.freeze([]);

/** The policies of one point, indexed by what their attachments name. */
class PointIndex {
  readonly all: AppliedPolicy[] = [];
  readonly byKey = new Map<string, AppliedPolicy[]>();
  readonly byTeam = new Map<string, AppliedPolicy[]>();
  readonly byModel = new Map<string, AppliedPolicy[]>();
  /** Each policy's place in the snapshot, to merge the lists in snapshot order. */
  readonly order = new Map<AppliedPolicy, number>();

  get empty(): boolean {
    return this.all.length === 0 && this.byKey.size === 0 && this.byTeam.size === 0 && this.byModel.size === 0;
  }

  /** The policies covering a subject, in snapshot order. */
  lookup(subject: GuardSubject): readonly AppliedPolicy[] {
    if (this.empty) return NONE;
    const lists = [this.all, this.byKey.get(subject.keyId), subject.teamId ? this.byTeam.get(subject.teamId) : undefined, this.byModel.get(subject.model)];
    let found: readonly AppliedPolicy[] | undefined;
    let several = false;
    for (const list of lists) {
      if (!list || list.length === 0) continue;
      if (found) several = true;
      else found = list;
    }
    if (!found) return NONE;
    if (!several) return found;
    const merged = new Set<AppliedPolicy>();
    for (const list of lists) for (const policy of list ?? []) merged.add(policy);
    return [...merged].sort((a, b) => this.order.get(a)! - this.order.get(b)!);
  }
}

function add(index: Map<string, AppliedPolicy[]>, name: string, policy: AppliedPolicy): void {
  const list = index.get(name);
  if (!list) index.set(name, [policy]);
  else if (!list.includes(policy)) list.push(policy);
}

/** A policy summary as the edge applies it. */
export function appliedPolicy(summary: PolicySummaryOutput): AppliedPolicy {
  return Object.freeze({
    name: summary.name ?? '',
    streamWindow: Object.freeze({ tokens: summary.stream_window?.tokens ?? 0, ms: summary.stream_window?.ms ?? 0 }),
    enforced: summary.mode !== 'MODE_MONITOR',
    onError: summary.on_error === 'ON_ERROR_BLOCK' ? 'block' : 'allow',
    restoreMasked: summary.restore_masked === true,
    deadlineMs: summary.deadline_ms ?? 0,
  });
}

/** The snapshot's policies indexed per point. */
function indexSnapshot(snapshot: PolicySnapshotOutput): Map<GuardPoint, PointIndex> {
  const indexes = new Map<GuardPoint, PointIndex>(POINTS.map((point) => [point, new PointIndex()]));
  snapshot.policies.forEach((summary, place) => {
    const policy = appliedPolicy(summary);
    const attachment = summary.attachment;
    for (const point of new Set(summary.points as string[])) {
      const index = indexes.get(point as GuardPoint);
      if (!index) continue;
      index.order.set(policy, place);
      if (attachment?.all_requests) index.all.push(policy);
      for (const keyId of attachment?.key_ids ?? []) add(index.byKey, keyId, policy);
      for (const teamId of attachment?.team_ids ?? []) add(index.byTeam, teamId, policy);
      for (const model of attachment?.models ?? []) add(index.byModel, model, policy);
    }
  });
  return indexes;
}

/** What the edge reads of the policies. */
export interface PolicyView {
  /** True once a snapshot arrived. */
  readonly ready: boolean;
  /** The enabled policies attached to a subject whose checks run at `point`, in snapshot order; the same empty list when none. */
  applying(point: GuardPoint, subject: GuardSubject): readonly AppliedPolicy[];
}

/**
 * A PolicyView fed by WatchPolicies; it reconnects with backoff and keeps the last snapshot
 * meanwhile (before the first one, no policy applies: an edge that never reached the guard checks
 * nothing, as one without GUARD_SERVICE_ADDR).
 */
export class WatchedPolicies implements PolicyView {
  private indexes = indexSnapshot({ version: 0, policies: [] });
  private version = -1;
  private readonly watch: SnapshotWatch<PolicySnapshotOutput>;
  ready = false;

  constructor(
    client: GuardServiceClient,
    private readonly logger: Logger,
    watchDeadlineMs = 10 * 60_000,
  ) {
    this.watch = new SnapshotWatch({
      open: (deadline) => client.WatchPolicies({}, { deadline }),
      apply: (snapshot) => this.apply(snapshot),
      logger,
      name: 'policy',
      deadlineMs: watchDeadlineMs,
    });
  }

  /** Applies a snapshot (also used by tests to seed the view). */
  apply(snapshot: PolicySnapshotOutput): void {
    this.indexes = indexSnapshot(snapshot);
    if (snapshot.version !== this.version) this.logger.info({ version: snapshot.version, policies: snapshot.policies.length }, 'policy snapshot');
    this.version = snapshot.version ?? 0;
    this.ready = true;
  }

  applying(point: GuardPoint, subject: GuardSubject): readonly AppliedPolicy[] {
    return this.indexes.get(point)!.lookup(subject);
  }

  /** Opens the watch; every call has a deadline, so the watch is renewed when it expires. */
  start(): void {
    this.watch.start();
  }

  /** Stops watching. */
  stop(): void {
    this.watch.stop();
  }
}
