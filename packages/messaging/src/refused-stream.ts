/**
 * The stream of refused requests: a UsageEvent (outcome OUTCOME_REFUSED) for each request the edge
 * refused before it reached a model (a rate limit, a budget, a model the key may not use), for the
 * request log alone. A stream of its own, beside the usage stream and never in it: refusals are
 * not billed, and a flood of them (a client retrying a 429 in a loop) must never take the room
 * the usage stream keeps for billable events. Bounded and lossy on purpose (`discard: old`): when
 * full it forgets its oldest refusals, which only the log would have shown.
 */
import { DiscardPolicy, type NatsConnection, type StreamInfo } from 'nats';
import { boundedStreamConfig, USAGE_STREAM } from './usage-stream.js';

/** A refused-requests stream's name and subject. */
export interface RefusedNames {
  stream: string;
  subject: string;
}

/**
 * The refused-requests stream of a usage stream: `REFUSED` and `refused.v1.request` beside the
 * default USAGE; `<name>_REFUSED` and `<name lower-cased>.refused.v1.request` beside another.
 */
export function refusedNames(usageStream: string = USAGE_STREAM): RefusedNames {
  if (usageStream === USAGE_STREAM) return { stream: 'REFUSED', subject: 'refused.v1.request' };
  return { stream: `${usageStream}_REFUSED`, subject: `${usageStream.toLowerCase()}.refused.v1.request` };
}

/** How long refusals are kept by default: a day, for the log to catch up after an outage of its own. */
export const REFUSED_MAX_AGE_MS = 24 * 60 * 60 * 1000;

/** The most bytes the refused-requests stream holds by default (64 MiB, about 300,000 refusals). */
export const REFUSED_MAX_BYTES = 64 * 1024 * 1024;

/** Creates the refused-requests stream, or updates it to these limits. */
export async function ensureRefusedStream(
  nc: NatsConnection,
  names: RefusedNames,
  options: { replicas?: number; maxAgeMs?: number; maxBytes?: number } = {},
): Promise<StreamInfo> {
  const manager = await nc.jetstreamManager();
  const config = boundedStreamConfig({
    name: names.stream,
    subjects: [names.subject],
    discard: DiscardPolicy.Old,
    maxAgeMs: options.maxAgeMs ?? REFUSED_MAX_AGE_MS,
    maxBytes: options.maxBytes ?? REFUSED_MAX_BYTES,
    replicas: options.replicas ?? 1,
  });
  try {
    return await manager.streams.add(config);
  } catch (error) {
    if (!/already in use|already exists/i.test((error as Error).message)) throw error;
    const { storage: _storage, ...updatable } = config;
    return manager.streams.update(config.name, updatable);
  }
}
