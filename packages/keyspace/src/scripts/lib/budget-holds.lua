-- A budget's holds (see ../../budget-holds.ts for their rules): the cost bound of every admitted
-- request not yet metered, counted against its key's (and its team's) budgets beside what was
-- spent. S: the spend hash, where `h:<id>` -> pico-USD held for one request and `held` -> their
-- sum; Z: zset id -> when the hold lapses (Unix ms). Amounts travel as decimal strings, so that
-- HINCRBY adds them exactly.

-- Drops the holds that lapsed by `now` (requests whose end was never reported); returns the sum
-- still held, in pico-USD.
local function heldNow(S, Z, now)
  local lapsed = redis.call('ZRANGEBYSCORE', Z, '-inf', now)
  for i = 1, #lapsed do
    local amount = redis.call('HGET', S, 'h:' .. lapsed[i])
    if amount then
      redis.call('HDEL', S, 'h:' .. lapsed[i])
      redis.call('HINCRBY', S, 'held', '-' .. amount)
    end
  end
  if #lapsed > 0 then redis.call('ZREMRANGEBYSCORE', Z, '-inf', now) end
  -- No hold left: whatever the sum says is stale (a Z that expired before S).
  if redis.call('EXISTS', Z) == 0 then
    if redis.call('HEXISTS', S, 'held') == 1 then redis.call('HDEL', S, 'held') end
    return 0
  end
  return tonumber(redis.call('HGET', S, 'held')) or 0
end

-- Holds `amount` (pico-USD, a decimal string above 0) for request `id` until `lapsesAt`, once per
-- id. S keeps the spend's time to live (spendTtl) when it has none yet (a first hold before any
-- spend); Z outlives its latest hold by holdMs.
local function hold(S, Z, id, amount, lapsesAt, holdMs, spendTtl)
  if redis.call('HSETNX', S, 'h:' .. id, amount) == 0 then return end
  redis.call('HINCRBY', S, 'held', amount)
  redis.call('ZADD', Z, lapsesAt, id)
  redis.call('PEXPIRE', Z, holdMs)
  if redis.call('PTTL', S) < 0 then redis.call('PEXPIRE', S, spendTtl) end
end

-- Releases request `id`'s hold, if it still has one (metered, or ended without usage): what it held
-- no longer counts. Idempotent; returns whether a hold was released.
local function release(S, Z, id)
  if redis.call('ZREM', Z, id) == 0 then
    redis.call('HDEL', S, 'h:' .. id)
    return false
  end
  local amount = redis.call('HGET', S, 'h:' .. id)
  if amount then
    redis.call('HDEL', S, 'h:' .. id)
    redis.call('HINCRBY', S, 'held', '-' .. amount)
  end
  return true
end
