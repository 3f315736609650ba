/**
 * The edge's side of its calls to the guard: how many Check calls it sent, and how many got no
 * answer (past the policies' deadline, or the guard unreachable), after which each policy's
 * on_error applied. The guard's own metrics cannot see a call that never reached it, so only the
 * edge can tell that a network policy, a DNS name or an overloaded replica turned checks into
 * on_error. Counted in plain integers on the request path and read when scraped.
 */
import { metric, type prometheus, serviceMetrics } from '@gateway/observability';

/** Why a Check got no answer, as decisions' `error` names it. */
export const GUARD_CALL_FAILURES = ['deadline_exceeded', 'unavailable'] as const;

/** One reason of GUARD_CALL_FAILURES. */
export type GuardCallFailure = (typeof GUARD_CALL_FAILURES)[number];

/** The counts of an edge's Check calls. */
export class GuardCallCounts {
  sent = 0;
  readonly failedBy: Record<GuardCallFailure, number> = { deadline_exceeded: 0, unavailable: 0 };
}

/**
 * Registers `gateway_edge_guard_checks_total` and `gateway_edge_guard_check_failures_total{reason}`
 * (every reason from 0, so that an alert on rate() sees the first failure), read from `counts`.
 */
// biome-ignore format: one metric a line
export function registerGuardCallMetrics(registry: prometheus.Registry, counts: GuardCallCounts): void {
  serviceMetrics(registry, {
    sent: metric.count('gateway_edge_guard_checks_total', 'Check calls the edge sent to the guard (one per point of a request a policy covers, one per stream window).', () => counts.sent),
    failed: metric.countByReason('gateway_edge_guard_check_failures_total', "Check calls that got no answer in time, by reason (deadline_exceeded, unavailable): each policy's on_error applied.", GUARD_CALL_FAILURES, () => counts.failedBy),
  });
}
