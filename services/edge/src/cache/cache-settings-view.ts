/**
 * The edge's copy of the cache's settings, kept current by the cache's WatchSettings push, so that
 * whether a request is cacheable is decided without any call: with no target enabled, a request
 * pays for one boolean; otherwise for four map lookups and a merge.
 */
import type { Logger } from '@gateway/logger';
import type { CacheServiceClient, CacheSettingsOutput, SettingsSnapshotOutput } from '@gateway/proto';
import { mergeSettings, type ResolvedSettings } from '@gateway/response-cache';
import { SnapshotWatch } from '../snapshot-watch.js';

/** Who a request is, as targets name it. */
export interface CacheSubject {
  keyId: string;
  teamId: string;
  /** The catalog model that serves it. */
  modelId: string;
}

/** What the pipeline asks of the settings. */
export interface CacheSettingsView {
  /** The request's settings when the cache is on for it; undefined when it is off. */
  settingsFor(subject: CacheSubject): ResolvedSettings | undefined;
}

/** The settings as the cache pushes them. */
export class WatchedCacheSettings implements CacheSettingsView {
  private byTarget = new Map<string, CacheSettingsOutput>();
  /** Whether any target turns the cache on: none, and no request looks further. */
  private anyEnabled = false;
  private version = -1;
  private readonly watch: SnapshotWatch<SettingsSnapshotOutput>;

  constructor(
    client: CacheServiceClient,
    private readonly logger: Logger,
    watchDeadlineMs = 10 * 60_000,
  ) {
    this.watch = new SnapshotWatch({
      open: (deadline) => client.WatchSettings({}, { deadline }),
      apply: (snapshot) => this.apply(snapshot),
      logger,
      name: 'cache settings',
      deadlineMs: watchDeadlineMs,
    });
  }

  /** Applies a snapshot (also used by tests to seed the view). */
  apply(snapshot: SettingsSnapshotOutput): void {
    this.byTarget = new Map(snapshot.settings.map((settings) => [settings.target ?? '', settings]));
    this.anyEnabled = snapshot.settings.some((settings) => settings.enabled === true);
    if (snapshot.version !== this.version) this.logger.info({ version: snapshot.version, targets: snapshot.settings.length }, 'cache settings snapshot');
    this.version = snapshot.version ?? 0;
  }

  settingsFor({ keyId, teamId, modelId }: CacheSubject): ResolvedSettings | undefined {
    if (!this.anyEnabled) return undefined;
    const { byTarget } = this;
    const settings = mergeSettings([
      byTarget.get('global'),
      byTarget.get(`model:${modelId}`),
      teamId ? byTarget.get(`team:${teamId}`) : undefined,
      byTarget.get(`key:${keyId}`),
    ]);
    return settings.enabled ? settings : undefined;
  }

  start(): void {
    this.watch.start();
  }

  stop(): void {
    this.watch.stop();
  }
}
