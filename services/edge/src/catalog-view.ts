/**
 * The edge's copy of the router's catalog, kept current by the router's WatchCatalog push, so an
 * explicit model id is resolved (and priced) without any call on the request path.
 */
import type { CatalogSnapshotOutput, ModelOutput, RouterServiceClient } from '@gateway/proto';
import type { Logger } from '@gateway/logger';
import { SnapshotWatch } from './snapshot-watch.js';

const TIERS: Record<string, string> = { QUALITY_TIER_ECONOMY: 'economy', QUALITY_TIER_STANDARD: 'standard', QUALITY_TIER_PREMIUM: 'premium' };

/** A proto QualityTier as the API shows it (`economy`, `standard`, `premium`), or null when unspecified. */
export function tierName(tier: string | null | undefined): string | null {
  return TIERS[tier ?? ''] ?? null;
}

/** What the edge reads of the catalog. */
export interface CatalogView {
  /** True once a snapshot arrived. */
  readonly ready: boolean;
  get(modelId: string): ModelOutput | undefined;
  /** Models in catalog order. */
  list(): readonly ModelOutput[];
}

/** A CatalogView fed by WatchCatalog; it reconnects with backoff and keeps the last snapshot meanwhile. */
export class WatchedCatalog implements CatalogView {
  private models: readonly ModelOutput[] = [];
  private byId = new Map<string, ModelOutput>();
  private version = -1;
  private readonly watch: SnapshotWatch<CatalogSnapshotOutput>;
  ready = false;

  constructor(
    client: RouterServiceClient,
    private readonly logger: Logger,
    watchDeadlineMs = 10 * 60_000,
  ) {
    this.watch = new SnapshotWatch({
      open: (deadline) => client.WatchCatalog({}, { deadline }),
      apply: (snapshot) => this.apply(snapshot),
      logger,
      name: 'catalog',
      deadlineMs: watchDeadlineMs,
    });
  }

  /** Applies a snapshot (also used by tests to seed the view). */
  apply(snapshot: CatalogSnapshotOutput): void {
    this.models = snapshot.models;
    this.byId = new Map(snapshot.models.map((model) => [model.id ?? '', model]));
    if (snapshot.version !== this.version) this.logger.info({ version: snapshot.version, models: snapshot.models.length }, 'catalog snapshot');
    this.version = snapshot.version ?? 0;
    this.ready = true;
  }

  get(modelId: string): ModelOutput | undefined {
    return this.byId.get(modelId);
  }

  list(): readonly ModelOutput[] {
    return this.models;
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
