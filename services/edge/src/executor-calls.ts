/**
 * The path main.ts imports the CompleteCalls streams to the executors from; they live in
 * clients/executor-calls.ts with the edge's other clients. This file goes once main.ts imports
 * clients/ itself.
 */
export { createExecutorCalls } from './clients/executor-calls.js';
