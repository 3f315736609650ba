/** The UsageService over real gRPC on port 0, for the tests that query what metering recorded. */
import { createClient, createGatewayServer, type GatewayServer } from '@gateway/grpc';
import { createLogger } from '@gateway/logger';
import { loadGatewayGrpc, type UsageServiceClient } from '@gateway/proto';
import type { RedisClient } from '@gateway/redis';
import { createUsageService } from '../usage-service.js';

/** A listening UsageService reading `redis`, and a client of it; `stop` closes both. */
export interface TestUsageService {
  readonly client: UsageServiceClient;
  stop(): Promise<void>;
}

/** Starts the UsageService on `redis` (logging nothing) and connects a client to it. */
export async function startUsageService(redis: RedisClient): Promise<TestUsageService> {
  const definition = loadGatewayGrpc().gateway.usage.v1.UsageService;
  const server: GatewayServer = createGatewayServer([
    {
      name: 'gateway.usage.v1.UsageService',
      definition: definition.service,
      handlers: createUsageService({ redis, logger: createLogger('usage-test', 'silent') }),
    },
  ]);
  const port = await server.listen('127.0.0.1:0');
  const client = createClient(definition, `127.0.0.1:${port}`);
  return {
    client,
    stop: async () => {
      client.close();
      await server.shutdown(1_000);
    },
  };
}
