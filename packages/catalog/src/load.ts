import type { Catalog, CatalogModel } from './model.js';

/** Thrown when the catalog file is invalid; the message says exactly what and where. */
export class CatalogError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CatalogError';
  }
}

/** The default catalog shipped with the gateway. */
export const DEFAULT_CATALOG_PATH: string = new URL('../catalog.yaml', import.meta.url).pathname;

/** Parses and validates catalog text (YAML or JSON). TODO(catalog helper): implement. */
export function parseCatalog(_text: string, _source: string): Catalog {
  throw new CatalogError('not implemented');
}

/** Reads and validates a catalog file. */
export function loadCatalog(_path: string = DEFAULT_CATALOG_PATH): Catalog {
  throw new CatalogError('not implemented');
}

/** The models that are on: simulated ones always, others when their key variable is set and non-empty. */
export function enabledModels(catalog: Catalog, env: Record<string, string | undefined>): CatalogModel[] {
  return catalog.models.filter((model) => model.provider === 'simulated' || (model.upstream.api_key_env !== undefined && Boolean(env[model.upstream.api_key_env])));
}
