/**
 * Publishes this replica's DeploymentHealthReport on NATS (`health.v1.deployment`): every
 * `intervalMs` (so that the router forgets a replica that died: reports expire after `ttlMs`),
 * and at once, debounced, whenever a deployment changes state. Never blocks or fails a request:
 * while NATS is unreachable reports are simply not sent, and the router falls back to treating
 * every model as available.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Logger } from '@gateway/logger';
import { DEPLOYMENT_HEALTH_SUBJECT, encodeDeploymentHealth, type NatsConnection, SingleTimeout } from '@gateway/messaging';
import type { DeploymentPool } from './pool/deployment-pool.js';

/** A change is published after this pause, so a burst of changes makes one report. */
const DEBOUNCE_MS = 20;

/** A replica id unique per process: host name, process id and a random suffix. */
export function newReplicaId(): string {
  return `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
}

/** Options of a HealthPublisher. */
export interface HealthPublisherOptions {
  readonly replicaId: string;
  readonly intervalMs: number;
  /** How long a report holds at the router; a few intervals, so one lost report changes nothing. */
  readonly ttlMs: number;
  readonly subject?: string;
}

/** Sends the pool's health on NATS until stopped. */
export class HealthPublisher {
  private connection: NatsConnection | undefined;
  private interval: NodeJS.Timeout | undefined;
  /** The report on change, after DEBOUNCE_MS. */
  private readonly debounce = new SingleTimeout(() => this.publish());
  private stopListening: (() => void) | undefined;
  private draining = false;

  /** Takes the promise of a connection, so the executor serves while NATS is still unreachable. */
  constructor(
    connection: Promise<NatsConnection>,
    private readonly pool: DeploymentPool,
    private readonly logger: Logger,
    private readonly options: HealthPublisherOptions,
  ) {
    connection.then(
      (nc) => {
        this.connection = nc;
        this.publish();
      },
      (error: unknown) => {
        this.logger.error({ err: error }, 'health publisher has no NATS connection');
      },
    );
  }

  /** Starts the periodic reports and the reports on change. */
  start(): void {
    this.interval = setInterval(() => this.publish(), this.options.intervalMs);
    this.interval.unref();
    this.stopListening = this.pool.onChange(() => this.debounce.schedule(DEBOUNCE_MS));
  }

  /**
   * Sends one last report saying this replica is draining (the router forgets it at once instead of
   * after its ttl), then stops; the caller drains the connection afterwards.
   */
  stop(): void {
    this.draining = true;
    this.publish();
    if (this.interval) clearInterval(this.interval);
    this.debounce.cancel();
    this.stopListening?.();
  }

  /** Publishes the current report now; a no-op without a connection. */
  publish(): void {
    const connection = this.connection;
    if (!connection || connection.isClosed()) return;
    try {
      connection.publish(
        this.options.subject ?? DEPLOYMENT_HEALTH_SUBJECT,
        encodeDeploymentHealth({
          replica_id: this.options.replicaId,
          sent_at_ms: Date.now(),
          ttl_ms: this.options.ttlMs,
          deployments: this.draining ? [] : this.pool.health(),
          draining: this.draining,
        }),
      );
    } catch (error) {
      this.logger.warn({ err: error }, 'deployment health report not published');
    }
  }
}
