import type { Redis } from 'ioredis';
import type { Catalog } from '@gateway/catalog';
import { createGatewayServer, type GatewayServer } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import { decodeUsageEvent, ensureUsageStream, startDurableConsumer, USAGE_STREAM, USAGE_SUBJECT, USAGE_SUBJECTS, type NatsConnection, type RunningConsumer } from '@gateway/messaging';
import { prometheus } from '@gateway/observability';
import type { UsageEventOutput } from '@gateway/proto';
import { createUsageMeter } from './usage-meter.js';

/** The durable consumer name: every metering replica shares it, so each event goes to one. */
export const METERING_DURABLE = 'metering';

/** What metering is wired from; the stream fields exist so tests can use a stream of their own. */
export interface MeteringDependencies {
  nc: NatsConnection;
  redis: Redis;
  catalog: Catalog;
  logger: Logger;
  registry?: prometheus.Registry;
  stream?: string;
  subjects?: string[];
  subject?: string;
  durableName?: string;
  /** Redelivery delays after a failure; see DurableConsumerOptions.backoffMs. */
  backoffMs?: number[];
}

/** Metering, wired and not yet started. */
export interface MeteringServer {
  /** Serves grpc.health.v1 only, for orchestrators' probes; listen on METERING_LISTEN_ADDR. */
  readonly grpc: GatewayServer;
  /** Ensures the usage stream and the durable consumer, then consumes. */
  start(): Promise<void>;
  /** Stops consuming once the event being metered is acknowledged. */
  stop(): Promise<void>;
}

/**
 * Wires the usage consumer: every event on USAGE_SUBJECT is priced and recorded once, acknowledged
 * only after Redis has it, terminated and counted when it can never be metered.
 */
export function createServer(dependencies: MeteringDependencies): MeteringServer {
  const { nc, logger } = dependencies;
  const stream = dependencies.stream ?? USAGE_STREAM;
  const meter = createUsageMeter(dependencies);
  const poison = new prometheus.Counter({
    name: 'gateway_metering_poison_messages_total',
    help: 'Usage messages terminated because they can never be metered, by reason.',
    labelNames: ['reason'],
    registers: dependencies.registry ? [dependencies.registry] : [],
  });
  let consumer: RunningConsumer | undefined;
  return {
    grpc: createGatewayServer([]),
    start: async () => {
      await ensureUsageStream(nc, { stream, subjects: dependencies.subjects ?? USAGE_SUBJECTS });
      consumer = await startDurableConsumer<UsageEventOutput>(nc, {
        stream,
        durableName: dependencies.durableName ?? METERING_DURABLE,
        filterSubject: dependencies.subject ?? USAGE_SUBJECT,
        decode: decodeUsageEvent,
        handle: async (event) => { await meter(event); },
        onPoison: (reason) => poison.inc({ reason }),
        backoffMs: dependencies.backoffMs,
        logger,
      });
    },
    stop: async () => {
      await consumer?.stop();
      consumer = undefined;
    },
  };
}
