/** Shared gRPC plumbing: the typed error that crosses services, servers with health, long-lived clients. */
export * from './gateway-error.js';
export * from './server.js';
export * from './client.js';
export { status as GrpcStatus, Metadata } from '@grpc/grpc-js';
export * from './health.js';
