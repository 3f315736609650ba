/**
 * How the router learns which models are unavailable: every executor replica publishes a
 * DeploymentHealthReport on NATS (`health.v1.deployment`) every few seconds and on each change;
 * this keeps each replica's latest report until its ttl passes (a replica that died goes silent
 * and is forgotten) or until it says it is draining, and decides per model:
 *
 * - unavailable while at least one live replica reports the model and none of them has a usable
 *   deployment of it (HEALTHY, PROBING, or OPEN whose wait has passed: the router does not wait
 *   for the executor's next report to let probes through, or the model could never recover);
 * - available otherwise, including when no replica reports it (no executor, NATS down): the router
 *   fails open, and an executor without a healthy deployment still answers model_unavailable.
 *
 * Each change goes to CatalogState.setAvailability with the earliest time a deployment is expected
 * back, so that WatchCatalog pushes it and the edge answers 503 without calling an executor.
 */
import type { Logger } from '@gateway/logger';
import { decodeDeploymentHealth, DEPLOYMENT_HEALTH_SUBJECT, type NatsConnection } from '@gateway/messaging';
import type { DeploymentHealthReportOutput } from '@gateway/proto';
import type { CatalogState } from './catalog-state.js';

/** One deployment as the latest report of a replica gave it. */
interface Entry {
  readonly modelId: string;
  readonly usable: boolean;
  /** For an OPEN deployment: unix ms when it probes again. */
  readonly backAt?: number;
}

interface ReplicaReport {
  readonly expiresAt: number;
  readonly entries: readonly Entry[];
}

/** The longest a report may claim to hold, whatever it says: a bad ttl must not pin a model down. */
const MAX_TTL_MS = 60_000;

/** Aggregates deployment health across executor replicas into CatalogState. */
export class DeploymentHealth {
  private readonly replicas = new Map<string, ReplicaReport>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly state: CatalogState,
    private readonly clock: () => number = Date.now,
  ) {}

  /** How many replicas have a live report. */
  get replicaCount(): number {
    return this.replicas.size;
  }

  /** Takes one report (decoded from NATS) and updates availability. */
  apply(report: DeploymentHealthReportOutput): void {
    const replicaId = report.replica_id ?? '';
    if (!replicaId) return;
    const now = this.clock();
    if (report.draining) {
      this.replicas.delete(replicaId);
    } else {
      // The ttl counts from receipt, not from sent_at_ms: replicas' clocks may disagree with ours.
      const ttl = Math.min(Math.max(Number(report.ttl_ms ?? 0), 1), MAX_TTL_MS);
      this.replicas.set(replicaId, {
        expiresAt: now + ttl,
        entries: (report.deployments ?? []).map((deployment) => {
          const open = deployment.state === 'DEPLOYMENT_STATE_OPEN';
          return {
            modelId: deployment.model_id ?? '',
            usable: !open,
            ...(open ? { backAt: now + Math.max(0, Number(deployment.retry_after_ms ?? 0)) } : {}),
          };
        }),
      });
    }
    this.update();
  }

  /** Recomputes every model's availability now; also runs on a timer at the next expiry. */
  update(): void {
    const now = this.clock();
    for (const [replicaId, report] of this.replicas) if (report.expiresAt <= now) this.replicas.delete(replicaId);
    const reported = new Map<string, { usable: boolean; backAt?: number }>();
    let nextEvent = Number.POSITIVE_INFINITY;
    for (const report of this.replicas.values()) {
      nextEvent = Math.min(nextEvent, report.expiresAt);
      for (const entry of report.entries) {
        const usable = entry.usable || (entry.backAt !== undefined && entry.backAt <= now);
        const current = reported.get(entry.modelId) ?? { usable: false };
        if (usable) current.usable = true;
        else if (entry.backAt !== undefined) {
          current.backAt = Math.min(current.backAt ?? entry.backAt, entry.backAt);
          nextEvent = Math.min(nextEvent, entry.backAt);
        }
        reported.set(entry.modelId, current);
      }
    }
    for (const model of this.state.enabledModels()) {
      const health = reported.get(model.id);
      if (!health || health.usable) this.state.setAvailability(model.id, true);
      else this.state.setAvailability(model.id, false, health.backAt === undefined ? undefined : Math.max(0, health.backAt - now));
    }
    this.schedule(nextEvent - now);
  }

  /** Stops the expiry timer. */
  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(delayMs: number): void {
    this.stop();
    if (!Number.isFinite(delayMs)) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.update();
      },
      Math.max(1, delayMs),
    );
    this.timer.unref();
  }
}

/**
 * Feeds every report published on NATS to `health` until the subscription ends (connection
 * drained); a payload that is not a report is logged and skipped.
 */
export function subscribeDeploymentHealth(
  connection: NatsConnection,
  health: DeploymentHealth,
  logger: Logger,
  subject = DEPLOYMENT_HEALTH_SUBJECT,
): ReturnType<NatsConnection['subscribe']> {
  const subscription = connection.subscribe(subject);
  void (async () => {
    for await (const message of subscription) {
      let report: DeploymentHealthReportOutput;
      try {
        report = decodeDeploymentHealth(message.data);
      } catch (error) {
        logger.warn({ err: error, subject }, 'deployment health report not readable; skipped');
        continue;
      }
      health.apply(report);
    }
  })();
  return subscription;
}
