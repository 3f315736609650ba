/**
 * Loads the gateway's contracts from /proto at run time and exposes them typed.
 *
 * gRPC services are loaded with @grpc/proto-loader; NATS payloads and binary trailers are encoded
 * with protobufjs directly. Both use the same options, so a message has one JavaScript shape
 * everywhere: snake_case field names as in the .proto files, int64 as number, enums as their
 * names, oneofs with a virtual field naming the set member, repeated fields always arrays.
 */
import { loadSync, type Options } from '@grpc/proto-loader';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ProtoGrpcType as AdminAccessGrpc } from './generated/admin_access.js';
import type { ProtoGrpcType as AuthGrpc } from './generated/auth.js';
import type { ProtoGrpcType as ExecutorGrpc } from './generated/executor.js';
import type { ProtoGrpcType as RequestLogGrpc } from './generated/request_log.js';
import type { ProtoGrpcType as ResponseStoreGrpc } from './generated/response_store.js';
import type { ProtoGrpcType as RouterGrpc } from './generated/router.js';
import type { ProtoGrpcType as TeamsGrpc } from './generated/teams.js';
import type { ProtoGrpcType as UsageGrpc } from './generated/usage_service.js';
import type { ProtoGrpcType as McpGrpc } from './generated/mcp.js';
import type { ProtoGrpcType as GuardGrpc } from './generated/guard.js';
import type { ProtoGrpcType as CacheGrpc } from './generated/cache.js';
import type { ProtoGrpcType as BatchGrpc } from './generated/batch.js';

/** The folder holding the .proto files. */
export const PROTO_ROOT = fileURLToPath(new URL('../../../proto', import.meta.url));

/** The conversion options every service uses; keep in step with scripts/gen.mjs. */
export const PROTO_OPTIONS: Options = Object.freeze({
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: false,
  arrays: true,
  oneofs: true,
  includeDirs: [PROTO_ROOT],
});

function protoFiles(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) return protoFiles(path);
    return name.endsWith('.proto') ? [relative(PROTO_ROOT, path)] : [];
  });
}

/** Every gRPC service and message of the gateway, typed. */
export type GatewayGrpc = AdminAccessGrpc &
  AuthGrpc &
  TeamsGrpc &
  ExecutorGrpc &
  RequestLogGrpc &
  ResponseStoreGrpc &
  RouterGrpc &
  UsageGrpc &
  McpGrpc &
  GuardGrpc &
  CacheGrpc &
  BatchGrpc;

let grpcCache: GatewayGrpc | undefined;

/** Loads every contract once per process and returns the grpc-js service constructors. */
export function loadGatewayGrpc(): GatewayGrpc {
  if (!grpcCache) {
    const definition = loadSync(protoFiles(PROTO_ROOT), PROTO_OPTIONS);
    grpcCache = grpc.loadPackageDefinition(definition) as unknown as GatewayGrpc;
  }
  return grpcCache;
}

let rootCache: protobuf.Root | undefined;

function protobufRoot(): protobuf.Root {
  if (!rootCache) {
    const root = new protobuf.Root();
    root.resolvePath = (_origin, target) => (target.startsWith('/') ? target : join(PROTO_ROOT, target));
    rootCache = root.loadSync(protoFiles(PROTO_ROOT), { keepCase: true });
  }
  return rootCache;
}

const CONVERSION: protobuf.IConversionOptions = { longs: Number, enums: String, defaults: false, arrays: true, oneofs: true };

/** Encodes and decodes one message type to and from bytes, with the shared conversion options. */
export interface MessageCodec<Input, Output> {
  encode(message: Input): Uint8Array;
  decode(bytes: Uint8Array): Output;
}

/** Returns the codec of a fully qualified message name (`gateway.usage.v1.UsageEvent`). */
export function messageCodec<Input, Output>(fullName: string): MessageCodec<Input, Output> {
  const type = protobufRoot().lookupType(fullName);
  return {
    encode: (message) => type.encode(type.fromObject(message as Record<string, unknown>)).finish(),
    decode: (bytes) => type.toObject(type.decode(bytes), CONVERSION) as Output,
  };
}

export * from './generated/index.js';
export * from './plans.js';
