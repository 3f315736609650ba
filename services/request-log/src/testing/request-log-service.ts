/**
 * The request-log service for the integration tests: a NATS connection of its own, its usage stream
 * made (TEST_USAGE_STREAM_MAX_BYTES unless `maxBytes` says), wired with the settings they share (a
 * month kept, upkeep hourly, small quick batches, redeliveries a second apart), started, listening
 * on port 0 with a client of it; `stop` ends it, deletes its streams and drains the connection.
 */
import { createClient } from '@gateway/grpc';
import { bodiesNames, ensureUsageStream, refusedNames } from '@gateway/messaging';
import { loadGatewayGrpc, type RequestLogServiceClient } from '@gateway/proto';
import { natsServers, natsUrl, TEST_USAGE_STREAM_MAX_BYTES } from '@gateway/testing';
import { connect, type NatsConnection } from 'nats';
import { createServer, type RequestLogDependencies, type RequestLogServer } from '../app.js';

/** A started request-log service, its NATS connection (for the tests' messages), a client of it, and its stop. */
export interface TestRequestLog {
  readonly server: RequestLogServer;
  readonly nc: NatsConnection;
  readonly client: RequestLogServiceClient;
  /** Closes the client, stops the service, deletes its usage, refused and bodies streams and drains its connection. */
  stop(): Promise<void>;
}

/** What a test must give: the rest defaults to the tests' shared settings. */
export type TestRequestLogDependencies = Omit<RequestLogDependencies, 'nc' | 'retentionDays' | 'maintenanceIntervalMs' | 'batchRows' | 'batchDelayMs'> &
  Partial<Omit<RequestLogDependencies, 'nc'>> & { stream: string };

/** Creates, starts and listens; see the file's comment. */
export async function startTestRequestLog(dependencies: TestRequestLogDependencies): Promise<TestRequestLog> {
  const { stream, subjects, maxBytes = TEST_USAGE_STREAM_MAX_BYTES } = dependencies;
  const nc = await connect({ servers: natsServers(await natsUrl()) });
  await ensureUsageStream(nc, { stream, subjects, maxBytes });
  const server = createServer({
    retentionDays: 30,
    maintenanceIntervalMs: 3_600_000,
    batchRows: 50,
    batchDelayMs: 20,
    backoffMs: [1_000, 1_000],
    ...dependencies,
    nc,
    maxBytes,
  });
  let port: number;
  try {
    await server.start();
    port = await server.grpc.listen('127.0.0.1:0');
  } catch (error) {
    // A start that failed half-way stops what it had started (a consumer retrying, the server).
    await server.grpc.shutdown(1_000).catch(() => undefined);
    await server.stop().catch(() => undefined);
    await nc.drain().catch(() => undefined);
    throw error;
  }
  const client = createClient(loadGatewayGrpc().gateway.request_log.v1.RequestLogService, `127.0.0.1:${port}`) as unknown as RequestLogServiceClient;
  return {
    server,
    nc,
    client,
    stop: async () => {
      client.close();
      await server.grpc.shutdown(1_000);
      await server.stop();
      const manager = await nc.jetstreamManager();
      for (const name of [stream, refusedNames(stream).stream, bodiesNames(stream).stream]) await manager.streams.delete(name).catch(() => undefined);
      await nc.drain();
    },
  };
}
