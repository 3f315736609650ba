/**
 * The prologue every service's process begins with, once its config is parsed: the logger and the
 * metrics registry, both named after the service, its shutdown (started before anything it closes
 * is opened), and the config files it reloads on change (the catalog, the plans), each reload
 * logged and counted in `gateway_config_reload_total`.
 */
import { ReloadableFile, type ReloadableFileOptions } from '@gateway/config';
import { createLogger, type Logger } from '@gateway/logger';
import type client from 'prom-client';
import { configReloadCounter, createRegistry } from './registry.js';
import { type ServiceLifecycle, type ShutdownOptions, startLifecycle } from './shutdown-signal.js';

/** The settings of a service's config the prologue reads. */
export interface ServiceStartConfig {
  readonly LOG_LEVEL: string;
  /** Milliseconds between polls of a reloaded file; absent in a service that reloads none. */
  readonly CONFIG_RELOAD_INTERVAL_MS?: number;
}

/** What a service's process is started with. */
export interface ServiceStart {
  readonly logger: Logger;
  readonly registry: client.Registry;
  /**
   * The process's shutdown, started at once: readiness reads its `shuttingDown`, and each resource
   * registers its close with `onStop` as it is opened (see startLifecycle).
   */
  readonly lifecycle: ServiceLifecycle;
  /**
   * Reads and validates a config file now (throwing when it is invalid, so that the service does
   * not start with it), reported to the service's logger and reload counter and polled every
   * CONFIG_RELOAD_INTERVAL_MS once its `start` is called.
   */
  reloadableFile<Value>(file: Pick<ReloadableFileOptions<Value>, 'path' | 'name' | 'parse'>): ReloadableFile<Value>;
}

/** Creates the logger, registry and shutdown of the named service, and its maker of reloaded files. */
export function startService(service: string, config: ServiceStartConfig, shutdown: ShutdownOptions): ServiceStart {
  const logger = createLogger(service, config.LOG_LEVEL);
  const registry = createRegistry(service);
  const lifecycle = startLifecycle(logger, shutdown);
  return {
    logger,
    registry,
    lifecycle,
    reloadableFile: (file) => new ReloadableFile({ ...file, logger, counter: configReloadCounter(registry), intervalMs: config.CONFIG_RELOAD_INTERVAL_MS }),
  };
}
