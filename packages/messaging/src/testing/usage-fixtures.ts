/** What the messaging tests share: usage streams of their own, and a usage event to publish on them. */
import { randomUUID } from 'node:crypto';
import type { UsageEvent } from '@gateway/proto';
import { natsUrl } from '@gateway/testing';
import { connect, type NatsConnection } from 'nats';
import { afterAll, beforeAll } from 'vitest';

/** A stream and subject of one test alone, so parallel runs and the real USAGE stream never mix. */
export function uniqueStream(): { stream: string; subject: string; subjects: string[] } {
  const id = randomUUID().replaceAll('-', '');
  return { stream: `USAGE_TEST_${id}`, subject: `test.${id}.usage.v1.completion`, subjects: [`test.${id}.usage.v1.>`] };
}

/** A completed request's usage event with this id (42 tokens of sim-small). */
export function usageEvent(eventId: string): UsageEvent {
  return {
    event_id: eventId,
    key_id: 'key_test',
    model_id: 'sim-small',
    provider: 'simulated',
    usage: { prompt_tokens: 12, completion_tokens: 30, total_tokens: 42, cached_tokens: 2 },
    received_at_ms: 1_763_700_000_000,
    outcome: 'OUTCOME_COMPLETED',
  };
}

/** A NATS connection for a describe block, and usage streams of its tests' own, deleted after the block. */
export interface TestStreams {
  /** The connection, open from the block's first test on. */
  readonly nc: NatsConnection;
  /** A stream and subject of one test alone (see uniqueStream), not created yet. */
  names(): { stream: string; subject: string; subjects: string[] };
}

/** Connects before the block's tests; after them deletes every stream `names` gave and drains. */
export function useTestStreams(): TestStreams {
  const created: string[] = [];
  const scope = {
    names: () => {
      const names = uniqueStream();
      created.push(names.stream);
      return names;
    },
  } as TestStreams & { nc: NatsConnection };
  beforeAll(async () => {
    scope.nc = await connect({ servers: await natsUrl() });
  });
  afterAll(async () => {
    const manager = await scope.nc.jetstreamManager();
    for (const stream of created) await manager.streams.delete(stream).catch(() => undefined);
    await scope.nc.drain();
  });
  return scope;
}
