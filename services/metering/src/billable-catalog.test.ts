import { describe, expect, it } from 'vitest';
import type { Catalog, CatalogModel } from '@gateway/catalog';
import { billableCatalog } from './billable-catalog.js';
import { testModel } from './testing/catalog-model.js';

function catalogOf(models: CatalogModel[]): Catalog {
  return { models, byId: new Map(models.map((model) => [model.id, model])) };
}

/** A reloaded file whose changes the test makes. */
function fakeFile(first: Catalog) {
  let listener: ((value: Catalog, previous: Catalog) => void) | undefined;
  const file = {
    current: first,
    onChange: (next: typeof listener) => {
      listener = next;
    },
    reload(next: Catalog) {
      const previous = file.current;
      file.current = next;
      listener?.(next, previous);
    },
  };
  return file;
}

const price = (input: number) => ({ input_micro_usd_per_mtok: input, cached_input_micro_usd_per_mtok: input, output_micro_usd_per_mtok: input });

describe('billableCatalog', () => {
  it('prices with the reloaded file, and keeps pricing a model a reload removed at its last price until it comes back', () => {
    const file = fakeFile(catalogOf([testModel('kept', price(1)), testModel('leaving', price(2))]));
    const source = billableCatalog(file);
    expect(source.current.byId.get('leaving')?.pricing.input_micro_usd_per_mtok).toBe(2);
    file.reload(catalogOf([testModel('kept', price(5))]));
    expect(source.current.byId.get('kept')?.pricing.input_micro_usd_per_mtok).toBe(5);
    expect(source.current.byId.get('leaving')?.pricing.input_micro_usd_per_mtok).toBe(2);
    // The catalog's own list is the file's.
    expect(source.current.models.map((model) => model.id)).toEqual(['kept']);
    file.reload(catalogOf([testModel('kept', price(5)), testModel('leaving', price(7))]));
    expect(source.current.byId.get('leaving')?.pricing.input_micro_usd_per_mtok).toBe(7);
    file.reload(catalogOf([testModel('kept', price(5))]));
    expect(source.current.byId.get('leaving')?.pricing.input_micro_usd_per_mtok).toBe(7);
  });
});
