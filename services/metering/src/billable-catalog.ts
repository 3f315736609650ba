/**
 * The catalog metering prices with, as the catalog file is reloaded: the file's models, plus every
 * model a reload removed, at its last price. Requests to a model still run (and their usage events
 * still arrive) after the model leaves the file; they are billed, not dropped as poison. A model
 * that comes back takes its new entry.
 */
import type { Catalog, CatalogModel } from '@gateway/catalog';
import type { CatalogSource } from './usage-meter.js';

/** A reloaded catalog file as metering needs it (a ReloadableFile of @gateway/config fits). */
export interface ReloadedCatalog {
  readonly current: Catalog;
  onChange(listener: (value: Catalog, previous: Catalog) => void): unknown;
  check?(): unknown;
}

/** A CatalogSource over a reloaded file that keeps pricing the models reloads removed. */
export function billableCatalog(file: ReloadedCatalog): CatalogSource {
  const removed = new Map<string, CatalogModel>();
  let current = file.current;
  file.onChange((next, previous) => {
    for (const model of previous.byId.values()) if (!next.byId.has(model.id)) removed.set(model.id, model);
    for (const id of next.byId.keys()) removed.delete(id);
    current = removed.size === 0 ? next : { models: next.models, byId: new Map([...removed, ...next.byId]) };
  });
  return {
    get current() {
      return current;
    },
    check: () => file.check?.(),
  };
}
