/**
 * The stream of refused requests: a UsageEvent (outcome OUTCOME_REFUSED) for each request the edge
 * refused before it reached a model (a rate limit, a budget, a model the key may not use), for the
 * request log alone. A stream of its own, beside the usage stream and never in it: refusals are
 * not billed, and a flood of them (a client retrying a 429 in a loop) must never take the room
 * the usage stream keeps for billable events. Bounded and lossy on purpose (`discard: old`): when
 * full it forgets its oldest refusals, which only the log would have shown.
 */
import { type SideStreamNames, sideStreamLimits, sideStreamNamesOf } from './side-stream.js';

/** A refused-requests stream's name and subject. */
export type RefusedNames = SideStreamNames;

/**
 * The refused-requests stream of a usage stream: `REFUSED` and `refused.v1.request` beside the
 * default USAGE; `<name>_REFUSED` and `<name lower-cased>.refused.v1.request` beside another.
 */
export const refusedNames: (usageStream?: string) => RefusedNames = sideStreamNamesOf('refused');

/** The refused stream's limits by default, for ensureSideStream: a day, and 64 MiB (about 300,000 refusals). */
export const REFUSED_LIMITS = sideStreamLimits(64 * 1024 * 1024);
