import { enabledModels, type Catalog, type CatalogModel } from '@gateway/catalog';
import type { CatalogSnapshot } from '@gateway/proto';
import { toModelMessage } from './model-message.js';

/** Receives every new snapshot after a change. */
export type SnapshotListener = (snapshot: CatalogSnapshot) => void;

/**
 * The catalog as the router serves it: which models are switched on (from the catalog file, which
 * may be replaced at run time, and the key variables, fixed at start), which of them are available
 * (changed at run time from the executors' deployment health, see deployment-health.ts),
 * and a version that grows with every change. Watchers subscribe to be told of each change.
 */
export class CatalogState {
  private currentCatalog: Catalog;
  private enabled: ReadonlyMap<string, CatalogModel>;
  private readonly env: Record<string, string | undefined>;
  private readonly unavailable = new Set<string>();
  /** For unavailable models: unix ms when a deployment is expected back, when known. */
  private readonly backAt = new Map<string, number>();
  private readonly listeners = new Set<SnapshotListener>();
  private currentVersion = 1;

  /** `env` decides which models are on: simulated ones always, others when their key variable is set. */
  constructor(catalog: Catalog, env: Record<string, string | undefined>) {
    this.currentCatalog = catalog;
    this.env = env;
    this.enabled = new Map(enabledModels(catalog, env).map((model) => [model.id, model]));
  }

  /** The catalog in use. */
  get catalog(): Catalog {
    return this.currentCatalog;
  }

  /**
   * Serves a new catalog (the file was reloaded): its switched-on models replace the old ones at
   * once, a model that stays keeps its availability, a new one starts available (the router fails
   * open until an executor reports otherwise), and every watcher gets the new snapshot. A request
   * being routed keeps the model objects it already holds.
   */
  replaceCatalog(catalog: Catalog): void {
    this.currentCatalog = catalog;
    this.enabled = new Map(enabledModels(catalog, this.env).map((model) => [model.id, model]));
    for (const id of [...this.unavailable]) if (!this.enabled.has(id)) this.unavailable.delete(id);
    for (const id of [...this.backAt.keys()]) if (!this.enabled.has(id)) this.backAt.delete(id);
    this.publish();
  }

  /** The version of the current snapshot. */
  get version(): number {
    return this.currentVersion;
  }

  /** How many watchers are subscribed. */
  get subscriberCount(): number {
    return this.listeners.size;
  }

  /** The switched-on model with this id, or undefined when it is unknown or off. */
  enabledModel(id: string): CatalogModel | undefined {
    return this.enabled.get(id);
  }

  /** The switched-on models, in catalog order. */
  enabledModels(): CatalogModel[] {
    return [...this.enabled.values()];
  }

  /** Whether a switched-on model may take requests now. */
  isAvailable(id: string): boolean {
    return this.enabled.has(id) && !this.unavailable.has(id);
  }

  /**
   * While a model is unavailable: milliseconds until a deployment of it is expected back (for a
   * Retry-After), or undefined when unknown or available.
   */
  retryAfterMs(id: string, now = Date.now()): number | undefined {
    const at = this.backAt.get(id);
    return at === undefined || !this.unavailable.has(id) ? undefined : Math.max(0, at - now);
  }

  /**
   * Marks a switched-on model available or not. A real change bumps the version and notifies
   * every watcher; setting the current value again, or naming a model that is off, changes
   * nothing and returns false (a new `retryAfterMs` of a model that stays unavailable is kept,
   * and rides on the next snapshot).
   */
  setAvailability(id: string, available: boolean, retryAfterMs?: number): boolean {
    if (!this.enabled.has(id)) return false;
    if (available || retryAfterMs === undefined) this.backAt.delete(id);
    else this.backAt.set(id, Date.now() + retryAfterMs);
    if (this.isAvailable(id) === available) return false;
    if (available) this.unavailable.delete(id);
    else this.unavailable.add(id);
    this.publish();
    return true;
  }

  /** Bumps the version and sends the new snapshot to every watcher. */
  private publish(): void {
    this.currentVersion += 1;
    const snapshot = this.snapshot();
    for (const listener of [...this.listeners]) listener(snapshot);
  }

  /** The switched-on models as gateway.router.v1.CatalogSnapshot. */
  snapshot(): CatalogSnapshot {
    return {
      version: this.currentVersion,
      models: this.enabledModels().map((model) => {
        const message = toModelMessage(model, this.isAvailable(model.id));
        const retryAfterMs = this.retryAfterMs(model.id);
        return retryAfterMs === undefined ? message : { ...message, retry_after_ms: retryAfterMs };
      }),
    };
  }

  /** Calls the listener with each new snapshot until the returned function is called; a listener must not throw. */
  subscribe(listener: SnapshotListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }
}
