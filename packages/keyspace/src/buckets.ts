import { dailyKey, hourlyKey, modelsKey, recentKey } from './keys.js';
import { DAY_MS, utcDay, utcMonth, utcMonthStartMs } from './spend.js';

/** Milliseconds in an hour. */
export const HOUR_MS = 3_600_000;

/** How long each kind of usage bucket is kept after its period ends. */
export interface BucketRetention {
  /** Hourly buckets, after their UTC day ends. */
  hourlyMs: number;
  /** Daily buckets, after their UTC month ends. */
  dailyMs: number;
}

/** Where one event's usage buckets live, and its fields' prefixes there. */
export interface BucketPlacement {
  hourly: string;
  daily: string;
  models: string;
  recent: string;
  /** `<hour>:` */
  hourField: string;
  /** `<day of month>:` */
  dayField: string;
  hourlyExpiresAtMs: number;
  dailyExpiresAtMs: number;
}

/** A key and its team ('' or absent: none), whose tag names the key's data (keys.ts's keyTag). */
export interface KeyOwner {
  keyId: string;
  teamId?: string;
}

/** The buckets an event of a key (its id, or the key and its team) and model received at `atMs` counts in. */
export function bucketPlacement(owner: string | KeyOwner, modelId: string, atMs: number, retention: BucketRetention): BucketPlacement {
  const { keyId, teamId } = typeof owner === 'string' ? { keyId: owner, teamId: undefined } : owner;
  const day = utcDay(atMs);
  const month = utcMonth(atMs);
  return {
    hourly: hourlyKey(keyId, modelId, day, teamId),
    daily: dailyKey(keyId, modelId, month, teamId),
    models: modelsKey(keyId, teamId),
    recent: recentKey(keyId, teamId),
    hourField: `${Math.floor((atMs - day * DAY_MS) / HOUR_MS)}:`,
    dayField: `${new Date(atMs).getUTCDate()}:`,
    hourlyExpiresAtMs: (day + 1) * DAY_MS + retention.hourlyMs,
    dailyExpiresAtMs: utcMonthStartMs(month + 1) + retention.dailyMs,
  };
}
