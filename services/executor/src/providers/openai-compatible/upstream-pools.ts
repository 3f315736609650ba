/**
 * The pools moved to ../upstream-pools.ts, shared by every HTTP adapter; this path stays so the
 * process wiring (main.ts, app.ts) and older imports keep working.
 */
export { UpstreamPools, type UpstreamTimeouts } from '../upstream-pools.js';
