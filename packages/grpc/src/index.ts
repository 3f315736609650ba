/** Shared gRPC plumbing: the typed error that crosses services, servers with health, long-lived clients, calls carried on long-lived streams. */
export * from './gateway-error.js';
export * from './error-reasons.js';
export * from './server.js';
export * from './client.js';
export { watchAddresses, nameKey, DEFAULT_REFRESH_MS, REFRESH_OPTION, type AddressListener } from './address-resolver.js';
export { status as GrpcStatus, Metadata } from '@grpc/grpc-js';
export * from './health.js';
export * from './streamed-calls.js';
export * from './store-failure.js';
export { WatchStreams } from './watch-streams.js';
