/** The model catalog: its validated shape, loading, which models are on, and pricing. */
export * from './model.js';
export * from './pricing.js';
export * from './load.js';
export * from './capabilities.js';
