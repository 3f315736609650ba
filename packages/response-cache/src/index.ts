/**
 * The response cache's shared rules: the key of a request (cache-key.ts) and the operator's
 * settings (settings.ts), used by the edge (which asks) and the cache service (which keeps).
 */
export * from './cache-key.js';
export * from './settings.js';
