/**
 * Metrics for every service: one prom-client registry per process with the default Node metrics,
 * names prefixed `gateway_`, and for gRPC services a small HTTP server with /metrics, /healthz and
 * /readyz. Labels never carry a key or any per-key value.
 */
import client from 'prom-client';

export { client as prometheus };

export * from './registry.js';
export * from './metric-table.js';

export * from './metrics-server.js';
export * from './shutdown-signal.js';
export * from './tracing.js';
export * from './service-start.js';
export * from './service-runner.js';
