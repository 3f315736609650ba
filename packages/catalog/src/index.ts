/** The model catalog: its validated shape, loading, which models are on, pricing, and model allow-lists. */
export * from './model.js';
export * from './pricing.js';
export * from './load.js';
export * from './capabilities.js';
export * from './model-allow-list.js';
