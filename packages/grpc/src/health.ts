import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { protoPath } from 'grpc-health-check';
import { channelOptions } from './client.js';

interface HealthClient extends grpc.Client {
  Check(
    request: { service: string },
    metadata: grpc.Metadata,
    options: grpc.CallOptions,
    callback: (error: grpc.ServiceError | null, response?: { status: string }) => void,
  ): grpc.ClientUnaryCall;
}

let HealthConstructor: (new (address: string, credentials: grpc.ChannelCredentials, options?: grpc.ChannelOptions) => HealthClient) | undefined;

/** A client of grpc.health.v1 on its own long-lived channel. */
export function createHealthClient(address: string): HealthClient {
  if (!HealthConstructor) {
    const definition = loadSync(protoPath, { keepCase: true, enums: String, defaults: true });
    const loaded = grpc.loadPackageDefinition(definition) as unknown as { grpc: { health: { v1: { Health: typeof HealthConstructor } } } };
    HealthConstructor = loaded.grpc.health.v1.Health;
  }
  return new HealthConstructor!(address, grpc.credentials.createInsecure(), channelOptions());
}

/** Resolves true when the service (or the whole server, for '') reports SERVING within the deadline. */
export function isServing(client: HealthClient, service = '', deadlineMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    client.Check({ service }, new grpc.Metadata(), { deadline: Date.now() + deadlineMs }, (error, response) => {
      resolve(!error && response?.status === 'SERVING');
    });
  });
}
