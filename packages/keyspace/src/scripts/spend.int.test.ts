import { readFileSync } from 'node:fs';
import { connectRedis, type RedisClient } from '@gateway/redis';
import { redisUrl } from '@gateway/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY_MS, utcDay, utcMonth } from '../spend.js';

// auth's decision reads the spend hash by the days and months Lua computes; metering writes it by
// the ones TypeScript computes. They must agree on every instant, or a budget reads an empty field.
const SPEND_LUA = readFileSync(new URL('./lib/spend.lua', import.meta.url), 'utf8');

let redis: RedisClient;

beforeAll(async () => {
  redis = connectRedis(await redisUrl());
});

afterAll(async () => {
  await redis?.quit();
});

describe('the spend arithmetic in Lua', () => {
  it("agrees with TypeScript's on the first and last millisecond of every day from 1999 to 2101", async () => {
    const instants: number[] = [];
    for (let day = utcDay(Date.UTC(1999, 0, 1)); day <= utcDay(Date.UTC(2101, 0, 1)); day += 1) instants.push(day * DAY_MS, (day + 1) * DAY_MS - 1);
    const script = `${SPEND_LUA}\nlocal out = {}\nfor i = 1, #ARGV do out[#out + 1] = utcDay(tonumber(ARGV[i])); out[#out + 1] = utcMonth(tonumber(ARGV[i])) end\nreturn out`;
    for (let start = 0; start < instants.length; start += 5_000) {
      const batch = instants.slice(start, start + 5_000);
      const reply = (await redis.eval(script, 0, ...batch.map(String))) as number[];
      expect(reply).toEqual(batch.flatMap((ms) => [utcDay(ms), utcMonth(ms)]));
    }
  });
});
