/**
 * What usage on a time axis costs Redis, per API key: keys that use three models around the clock
 * (a request per model every five minutes, so every hourly bucket of every model is filled, the
 * worst case for the layout) are metered through the real record script, then Redis's own MEMORY
 * USAGE is read for each structure. Reported: bytes per key per day of hourly and of daily
 * buckets, the fixed cost of a key (latest requests, spend, models), and what a key holds at the
 * retention's steady state (15 days of hourly buckets, 14 months of daily ones).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { connectRedis, deleteMatching } from '@gateway/redis';
import { DAY_MS } from '../packages/keyspace/src/spend.js';
import { redisUrl } from '@gateway/testing';
import { dailyKey, hourlyKey, modelsKey, recentKey, spendKeyName } from '../packages/keyspace/src/keys.js';
import { recordEvent } from '../services/metering/src/usage-store.js';
import type { BenchSuite } from './run.js';
import { table } from './measure.js';

const KEYS = 20;
const MODELS = ['gpt-4o-mini', 'anthropic/claude-3-5-haiku-20241022', 'sim-mini'];
const EVENTS_PER_MODEL_PER_DAY = 24 * 12;
/** Days of daily buckets written, to measure a month hash's growth per day. */
const DAYS = 28;

export const suite: BenchSuite = {
  name: 'usage-memory',
  description: 'Redis bytes per API key for usage buckets, latest requests and spend (3 models, busy every hour)',
  async run() {
    const redis = connectRedis(await redisUrl());
    const stream = `USAGE_MEMORY_${randomUUID().slice(0, 8)}`;
    const keyIds = Array.from(
      { length: KEYS },
      () =>
        `key_${randomBytes(16)
          .toString('hex')
          .replace(/[^A-Za-z0-9]/g, '')
          .slice(0, 16)}`,
    );
    // A day of events from yesterday 00:00 UTC; then one event per model on each of the month's
    // other days, which fills the daily buckets without the hourly ones of those days.
    const day = Math.floor(Date.now() / DAY_MS) - 1;
    const monthStart = Date.UTC(new Date(day * DAY_MS).getUTCFullYear(), new Date(day * DAY_MS).getUTCMonth(), 1);
    let sequence = 0;
    const record = (keyId: string, modelId: string, atMs: number) =>
      recordEvent(redis, {
        stream: stream,
        eventId: `evt-${randomUUID()}`,
        sequence: (sequence += 1),
        usage: {
          key_id: keyId,
          model_id: modelId,
          prompt_tokens: 1_200,
          completion_tokens: 350,
          cached_tokens: sequence % 3 === 0 ? 256 : 0,
          cost_pico_usd: 6_250_000_000n,
          received_at_ms: atMs,
          recent: JSON.stringify({
            event_id: randomUUID(),
            request_id: `req_${randomUUID().replaceAll('-', '')}`,
            key_id: keyId,
            received_at_ms: atMs,
            requested_model: 'auto',
            model_id: modelId,
            provider: 'openai',
            stream: true,
            outcome: 'OUTCOME_COMPLETED',
            latency_ms: 812,
            prompt_tokens: 1200,
            completion_tokens: 350,
            cost_pico_usd: '6250000000',
            fallback_attempts: 0,
            auto: { score: 0.4123, tier: 'standard', policy: 'balanced' },
            error_code: '',
          }),
        },
      });
    try {
      const started = performance.now();
      for (const keyId of keyIds) {
        const writes: Array<Promise<boolean>> = [];
        for (const modelId of MODELS) {
          for (let index = 0; index < EVENTS_PER_MODEL_PER_DAY; index += 1) writes.push(record(keyId, modelId, day * DAY_MS + index * 300_000));
        }
        await Promise.all(writes);
      }
      const events = KEYS * MODELS.length * EVENTS_PER_MODEL_PER_DAY;
      const ms = performance.now() - started;
      const usage = async (name: string) => Number((await redis.call('MEMORY', 'USAGE', name, 'SAMPLES', '0')) ?? 0);
      const month = new Date(day * DAY_MS).getUTCFullYear() * 12 + new Date(day * DAY_MS).getUTCMonth();
      const sums = { hourly: 0, dailyOneDay: 0, dailyMonth: 0, recent: 0, spend: 0, models: 0 };
      for (const keyId of keyIds) {
        for (const modelId of MODELS) {
          sums.hourly += await usage(hourlyKey(keyId, modelId, day));
          sums.dailyOneDay += await usage(dailyKey(keyId, modelId, month));
        }
        sums.recent += await usage(recentKey(keyId));
        sums.spend += await usage(spendKeyName(keyId));
        sums.models += await usage(modelsKey(keyId));
      }
      // The rest of the month's days, one event per model each: a full month hash.
      for (const keyId of keyIds) {
        const writes: Array<Promise<boolean>> = [];
        for (let offset = 0; offset < DAYS; offset += 1) {
          const at = monthStart + offset * DAY_MS + 3_600_000;
          if (Math.floor(at / DAY_MS) === day) continue;
          for (const modelId of MODELS) writes.push(record(keyId, modelId, at));
        }
        await Promise.all(writes);
      }
      for (const keyId of keyIds) for (const modelId of MODELS) sums.dailyMonth += await usage(dailyKey(keyId, modelId, month));
      const perKey = (bytes: number) => Math.round(bytes / KEYS);
      const hourlyPerDay = perKey(sums.hourly);
      const dailyPerDay = Math.round(perKey(sums.dailyMonth) / DAYS);
      const fixed = perKey(sums.recent + sums.spend + sums.models);
      const steady = 15 * hourlyPerDay + 14 * perKey(sums.dailyMonth) + fixed;
      table(
        ['what', 'bytes per key'],
        [
          ['hourly buckets, one day (3 models x 24 hours)', hourlyPerDay],
          ['daily buckets, per day (a month hash of 28 days / 28)', dailyPerDay],
          ['daily buckets, one month hash set (3 models)', perKey(sums.dailyMonth)],
          [`latest requests (20, about ${Math.round(perKey(sums.recent) / 20)} B each)`, perKey(sums.recent)],
          ['spend hash + models set', perKey(sums.spend + sums.models)],
          ['**per key per day (hourly + daily)**', hourlyPerDay + dailyPerDay],
          ['**steady state per key (15 days hourly, 14 months daily, latest requests)**', steady],
        ],
      );
      console.log(
        `\n${events} events metered through the record script in ${(ms / 1000).toFixed(1)} s (${Math.round(events / (ms / 1000))} events/s, one client).`,
      );
    } finally {
      for (const keyId of keyIds) await deleteMatching(redis, `metering:*{${keyId}}*`);
      await redis.quit();
    }
  },
};
