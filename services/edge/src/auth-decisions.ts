/**
 * The path main.ts imports the Decide streams to auth from; they live in clients/auth-decisions.ts
 * with the edge's other clients. This file goes once main.ts imports clients/ itself.
 */
export { createAuthDecisions } from './clients/auth-decisions.js';
