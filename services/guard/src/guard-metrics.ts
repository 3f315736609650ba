import { metric, type prometheus, serviceMetrics } from '@gateway/observability';

/**
 * The guard's metrics. Labels are bounded: policy names (at most MAX_POLICIES), check names of a
 * policy (at most 32 each), the actions, the points, the kinds and the error reasons.
 */
export interface GuardMetrics {
  /** Every check run, by policy, check and outcome: the action it took (`block`, `mask`, `flag`; a monitor policy's too) or `pass`. */
  readonly checks: prometheus.Counter<'policy' | 'check' | 'action'>;
  /** Checks that could not run, by policy, check and reason (`deadline_exceeded`, `unavailable`, `upstream_error`, `internal`). */
  readonly checkErrors: prometheus.Counter<'policy' | 'check' | 'reason'>;
  /** How long one check took, by kind (`secrets`, `pii`, `patterns`, `limits`, `external`). */
  readonly checkDuration: prometheus.Histogram<'kind'>;
  /** Check calls answered, by point and outcome (`blocked`, `passed`, `refused` for an invalid call). */
  readonly calls: prometheus.Counter<'point' | 'outcome'>;
  /** Enabled policies as last read from Redis. */
  readonly policies: prometheus.Gauge;
  /** Edges watching this replica's policies. */
  readonly watchers: prometheus.Gauge;
}

const KINDS = ['secrets', 'pii', 'patterns', 'limits', 'external'];

/** Registers the guard's metrics on the process registry. */
export function createGuardMetrics(registry: prometheus.Registry | undefined): GuardMetrics {
  return serviceMetrics(registry, {
    checks: metric.counterBy('gateway_guard_checks_total', 'Checks run, by policy, check and the action taken (pass: nothing found).', [
      'policy',
      'check',
      'action',
    ]),
    checkErrors: metric.counterBy('gateway_guard_check_errors_total', 'Checks that could not run, by policy, check and reason.', ['policy', 'check', 'reason']),
    checkDuration: metric.histogram(
      'gateway_guard_check_duration_seconds',
      'Time one check of a policy took, by kind of check.',
      [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      ['kind'],
      KINDS,
    ),
    calls: metric.counterBy('gateway_guard_calls_total', 'Check calls answered, by point and outcome.', ['point', 'outcome']),
    policies: metric.gauge('gateway_guard_policies', 'Enabled guardrail policies as last read from Redis.'),
    watchers: metric.gauge('gateway_guard_watchers', "Edges watching this replica's policies (WatchPolicies streams)."),
  });
}
