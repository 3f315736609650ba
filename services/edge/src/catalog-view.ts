/**
 * The edge's copy of the router's catalog, kept current by the router's WatchCatalog push, so an
 * explicit model id is resolved (and priced) without any call on the request path.
 */
import type { CatalogSnapshotOutput, ModelOutput, RouterServiceClient } from '@gateway/proto';
import type { Logger } from '@gateway/logger';
import { SingleTimeout } from '@gateway/messaging';
import { ExponentialBackoff, noJitterGenerator, type IBackoff } from 'cockatiel';

/** Reconnection delays of the catalog watch: 100 ms doubling to at most 2 s, with no jitter. */
const RECONNECT_BACKOFF = new ExponentialBackoff({ initialDelay: 100, maxDelay: 2_000, exponent: 2, generator: noJitterGenerator });

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
  private call: ReturnType<RouterServiceClient['WatchCatalog']> | undefined;
  private readonly retryTimer = new SingleTimeout(() => this.start());
  private stopped = false;
  /** The reconnection backoff since the last snapshot arrived; undefined when connected. */
  private backoff: IBackoff<unknown> | undefined;
  ready = false;

  constructor(
    private readonly client: RouterServiceClient,
    private readonly logger: Logger,
    private readonly watchDeadlineMs = 10 * 60_000,
  ) {}

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
    if (this.stopped) return;
    const call = this.client.WatchCatalog({}, { deadline: Date.now() + this.watchDeadlineMs });
    this.call = call;
    call.on('data', (snapshot: CatalogSnapshotOutput) => {
      this.backoff = undefined;
      this.apply(snapshot);
    });
    call.on('error', (error: Error & { code?: number }) => {
      if (!this.stopped && error.code !== 4) this.logger.warn({ err: error.message }, 'catalog watch failed; retrying');
    });
    call.on('close', () => this.scheduleRetry());
    call.on('end', () => this.scheduleRetry());
  }

  private scheduleRetry(): void {
    if (this.stopped || this.retryTimer.pending) return;
    this.backoff = this.backoff ? this.backoff.next(undefined) : RECONNECT_BACKOFF.next();
    this.retryTimer.schedule(this.backoff.duration);
  }

  /** Stops watching. */
  stop(): void {
    this.stopped = true;
    this.retryTimer.cancel();
    this.call?.cancel();
  }
}
