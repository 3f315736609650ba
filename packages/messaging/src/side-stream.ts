/**
 * The request log's side streams beside a usage stream (refused requests, request bodies): each
 * for the request log alone, never in the usage stream, so that what is never billed never takes
 * the room the usage stream keeps for billable events. Bounded and lossy on purpose
 * (`discard: old`): when full, a side stream forgets its oldest messages, which only the log
 * would have shown.
 */
import { DiscardPolicy, type NatsConnection, type StreamInfo } from 'nats';
import { boundedStreamConfig, USAGE_STREAM } from './usage-stream.js';

/** A side stream's name and subject. */
export interface SideStreamNames {
  stream: string;
  subject: string;
}

/**
 * How long a side stream keeps its messages by default: a day, for the log to catch up after an
 * outage of its own.
 */
const SIDE_STREAM_MAX_AGE_MS = 24 * 60 * 60 * 1000;

/**
 * The names of the side stream `kind` (`refused`, `bodies`, `tool_calls`) beside a usage stream,
 * its subject ending in `event` (`request` unless given): `REFUSED` and `refused.v1.request`
 * beside the default USAGE; `<name>_REFUSED` and `<name lower-cased>.refused.v1.request` beside
 * another.
 */
export function sideStreamNamesOf(kind: string, event = 'request'): (usageStream?: string) => SideStreamNames {
  const stream = kind.toUpperCase();
  return (usageStream = USAGE_STREAM) =>
    usageStream === USAGE_STREAM
      ? { stream, subject: `${kind}.v1.${event}` }
      : { stream: `${usageStream}_${stream}`, subject: `${usageStream.toLowerCase()}.${kind}.v1.${event}` };
}

/** A side stream's limits by default, for ensureSideStream: a day, and at most `maxBytes`. */
export function sideStreamLimits(maxBytes: number): { maxAgeMs: number; maxBytes: number } {
  return { maxAgeMs: SIDE_STREAM_MAX_AGE_MS, maxBytes };
}

/** A side stream's limits: its replicas (1 by default), how long and how many bytes it keeps. */
export interface SideStreamLimits {
  replicas?: number | undefined;
  maxAgeMs: number;
  maxBytes: number;
}

/** Creates a side stream, or updates it to these limits. */
export async function ensureSideStream(nc: NatsConnection, names: SideStreamNames, limits: SideStreamLimits): Promise<StreamInfo> {
  const manager = await nc.jetstreamManager();
  const config = boundedStreamConfig({
    name: names.stream,
    subjects: [names.subject],
    discard: DiscardPolicy.Old,
    maxAgeMs: limits.maxAgeMs,
    maxBytes: limits.maxBytes,
    replicas: limits.replicas ?? 1,
  });
  try {
    return await manager.streams.add(config);
  } catch (error) {
    if (!/already in use|already exists/i.test((error as Error).message)) throw error;
    const { storage: _storage, ...updatable } = config;
    return manager.streams.update(config.name, updatable);
  }
}
