/**
 * Every deployment of every model this executor serves, each with its breaker, its measured time
 * to first byte (an exponentially weighted moving average) and its count of outstanding requests.
 * `pick` balances a model's usable deployments by expected wait: EWMA x (outstanding + 1), so a
 * slower or busier deployment gets fewer requests and an unmeasured one is tried first. A
 * measurement fades while its deployment gets no request (halved every LATENCY_HALF_LIFE_MS), so
 * a deployment that was slow once is tried again and measured anew rather than left without
 * traffic for good. The pool also builds this replica's DeploymentHealthReport for the router.
 */
import type { CatalogDeployment, CatalogModel, Upstream } from '@gateway/catalog';
import type { DeploymentHealth } from '@gateway/proto';
import { DeploymentBreaker, type BreakerOptions, type Clock } from './deployment-breaker.js';

/** Weight of the newest sample in the latency average: about the last 10 requests count. */
const EWMA_WEIGHT = 0.2;
/**
 * How fast a deployment's measured latency fades while it gets no request: halved every 10 s. A
 * deployment that answered 10 times slower than another once gets a request again within about
 * 35 s of no traffic (sooner when the other is busy), and a deployment in use is measured far more
 * often than this, so its figure is its recent latency.
 */
export const LATENCY_HALF_LIFE_MS = 10_000;

/** One deployment: a model at one upstream. */
export class Deployment {
  /** `"<index>:<origin>"`, or `"0:in-process"` for a simulated model; never a key. */
  readonly id: string;
  /** The catalog model with `upstream` set to this deployment's, as adapters read it. */
  readonly model: CatalogModel;
  readonly breaker: DeploymentBreaker;
  /**
   * A simulated model runs inside the executor: it cannot be down or overloaded, and its failures
   * are directives written in the request, so they are neither retried nor held against it.
   */
  readonly inProcess: boolean;
  /** Average time to first byte in ms as last measured; undefined until measured. */
  latencyMs: number | undefined;
  outstanding = 0;
  /** When latencyMs was last measured (the clock's ms). */
  private measuredAt = 0;
  private readonly clock: Clock;

  constructor(model: CatalogModel, index: number, options: BreakerOptions, clock: Clock) {
    this.model = model;
    this.clock = clock;
    this.inProcess = model.provider === 'simulated';
    this.id = this.inProcess ? `${index}:in-process` : `${index}:${originOf(model.upstream)}`;
    this.breaker = new DeploymentBreaker(options, clock);
  }

  /** Records one time to first byte. */
  observeLatency(ms: number): void {
    const now = this.clock();
    const previous = this.latencyAt(now);
    this.latencyMs = previous === undefined ? ms : previous + EWMA_WEIGHT * (ms - previous);
    this.measuredAt = now;
  }

  /** The measured latency faded by the time since it was measured; undefined until measured. */
  latencyAt(now: number): number | undefined {
    if (this.latencyMs === undefined) return undefined;
    const idle = Math.max(0, now - this.measuredAt);
    return idle === 0 ? this.latencyMs : this.latencyMs * 0.5 ** (idle / LATENCY_HALF_LIFE_MS);
  }

  /** The expected wait of one more request here at `now`; lower is better. */
  costAt(now: number): number {
    return (this.latencyAt(now) ?? 0) * (this.outstanding + 1) + this.outstanding;
  }
}

/**
 * Whether the model of a model's first deployment (the catalog entry itself: its upstream is the
 * entry's) equals the catalog entry `model`, field for field (the parser writes fields in one order).
 */
function sameEntry(deployed: CatalogModel | undefined, model: CatalogModel): boolean {
  return deployed !== undefined && JSON.stringify(deployed) === JSON.stringify(model);
}

function originOf(upstream: Upstream): string {
  try {
    return new URL(upstream.base_url ?? '').origin;
  } catch {
    return 'unknown';
  }
}

/** The deployments of each served model. */
export class DeploymentPool {
  private byModel = new Map<string, Deployment[]>();
  private readonly listeners = new Set<() => void>();

  /**
   * `models` are the enabled models; a deployment beyond `upstream` is served only when its key
   * variable is set in `environment` (the model itself is on through `upstream`'s).
   */
  constructor(
    models: readonly CatalogModel[],
    private readonly environment: Readonly<Record<string, string | undefined>>,
    private readonly options: BreakerOptions,
    private readonly clock: Clock = Date.now,
  ) {
    for (const model of models) this.byModel.set(model.id, this.deploymentsFor(model));
  }

  /**
   * Serves a new set of enabled models (the catalog was reloaded), at once: a model whose catalog
   * entry is unchanged keeps its deployments (their breakers, latencies, outstanding counts); a
   * new or changed one gets new deployments; a removed one is no longer served. A request in
   * flight keeps the deployment it holds and finishes there. Listeners are told (a health report
   * goes out).
   */
  replaceModels(models: readonly CatalogModel[]): void {
    const next = new Map<string, Deployment[]>();
    for (const model of models) {
      const current = this.byModel.get(model.id);
      const unchanged = current !== undefined && sameEntry(current[0]?.model, model);
      next.set(model.id, unchanged ? current : this.deploymentsFor(model));
    }
    const previous = this.byModel;
    this.byModel = next;
    for (const [modelId, deployments] of previous) {
      if (next.get(modelId) === deployments) continue;
      for (const deployment of deployments) {
        deployment.breaker.onChange(() => undefined);
        deployment.breaker.dispose();
      }
    }
    this.notify();
  }

  private deploymentsFor(model: CatalogModel): Deployment[] {
    const upstreams = [
      model.upstream,
      ...(model.deployments ?? []).filter((upstream) => !upstream.api_key_env || Boolean(this.environment[upstream.api_key_env])),
    ];
    // A deployment of another provider is served by that provider's adapter and priced at its own
    // prices: the model the adapter reads is the catalog entry with the deployment's provider,
    // upstream and pricing.
    const deployments = upstreams.map((deployment, index) => {
      const { provider, pricing, ...upstream } = deployment as CatalogDeployment;
      const served: CatalogModel = { ...model, provider: provider ?? model.provider, pricing: pricing ?? model.pricing, upstream };
      return new Deployment(served, index, this.options, this.clock);
    });
    for (const deployment of deployments) deployment.breaker.onChange(() => this.notify());
    return deployments;
  }

  private notify(): void {
    for (const listener of this.listeners) listener();
  }

  /** Whether this executor serves the model. */
  has(modelId: string): boolean {
    return this.byModel.has(modelId);
  }

  /** The deployments of a model, in catalog order. */
  deploymentsOf(modelId: string): readonly Deployment[] {
    return this.byModel.get(modelId) ?? [];
  }

  /**
   * Chooses a usable deployment of the model and acquires its breaker (the caller must then
   * `finish` it), preferring ones not in `avoid` (those that already failed this request);
   * undefined when every deployment is open.
   */
  pick(modelId: string, avoid: ReadonlySet<Deployment> = new Set()): Deployment | undefined {
    const deployments = this.deploymentsOf(modelId);
    const now = this.clock();
    const ordered = [...deployments].sort((a, b) => (avoid.has(a) ? 1 : 0) - (avoid.has(b) ? 1 : 0) || a.costAt(now) - b.costAt(now) || Math.random() - 0.5);
    for (const deployment of ordered) {
      if (deployment.breaker.tryAcquire()) {
        deployment.outstanding += 1;
        return deployment;
      }
    }
    return undefined;
  }

  /** While a model has no usable deployment: milliseconds until its first one probes again. */
  retryAfterMs(modelId: string): number {
    const waits = this.deploymentsOf(modelId).map((deployment) => deployment.breaker.retryAfterMs);
    return waits.length === 0 ? 0 : Math.min(...waits);
  }

  /** Called whenever a deployment's state changes. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** The state of every deployment, for the health report. */
  /** Requests being served now, over every deployment. */
  inFlight(): number {
    let total = 0;
    for (const deployments of this.byModel.values()) for (const deployment of deployments) total += deployment.outstanding;
    return total;
  }

  health(): DeploymentHealth[] {
    const entries: DeploymentHealth[] = [];
    for (const [modelId, deployments] of this.byModel) {
      for (const deployment of deployments) {
        const state = deployment.breaker.state;
        entries.push({
          model_id: modelId,
          deployment_id: deployment.id,
          state: state === 'healthy' ? 'DEPLOYMENT_STATE_HEALTHY' : state === 'probing' ? 'DEPLOYMENT_STATE_PROBING' : 'DEPLOYMENT_STATE_OPEN',
          ...(state === 'open' ? { retry_after_ms: deployment.breaker.retryAfterMs } : {}),
        });
      }
    }
    return entries;
  }

  /** Stops the breakers' timers. */
  dispose(): void {
    for (const deployments of this.byModel.values()) for (const deployment of deployments) deployment.breaker.dispose();
  }
}
