-- The sliding-window quota of one API key (see ../../window.ts for its rules). R: zset request id ->
-- allowed at (ms); T: zset charge id -> charged at (ms); H: hash `t:<id>` -> tokens charged,
-- `s:<id>` -> settled, `total` -> sum of the charges in T, `window_ms` -> the window's length as
-- auth last applied it; P: zset of unsettled charges that left T, kept until pendingMaxAge for a
-- late settlement.

-- The window's length when H does not record one (data written before it was recorded).
local DEFAULT_WINDOW_MS = 60000

-- Unix ms: `given` when not '', else Redis TIME (one clock for every replica).
local function clock(given)
  if given ~= nil and given ~= '' then return tonumber(given) end
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

-- An entry charged at t counts while now < t + window.
local function expire(R, T, H, P, now, window, pendingMaxAge)
  local cutoff = now - window
  redis.call('ZREMRANGEBYSCORE', R, '-inf', cutoff)
  local old = redis.call('ZRANGEBYSCORE', T, '-inf', cutoff, 'WITHSCORES')
  if #old > 0 then
    local freed = 0
    for i = 1, #old, 2 do
      local id = old[i]
      freed = freed + (tonumber(redis.call('HGET', H, 't:' .. id)) or 0)
      if redis.call('HEXISTS', H, 's:' .. id) == 1 then
        redis.call('HDEL', H, 't:' .. id, 's:' .. id)
      else
        redis.call('ZADD', P, old[i + 1], id)
      end
    end
    redis.call('ZREMRANGEBYSCORE', T, '-inf', cutoff)
    redis.call('HINCRBY', H, 'total', -freed)
  end
  local stale = redis.call('ZRANGEBYSCORE', P, '-inf', now - pendingMaxAge)
  if #stale > 0 then
    for i = 1, #stale do redis.call('HDEL', H, 't:' .. stale[i]) end
    redis.call('ZREMRANGEBYSCORE', P, '-inf', now - pendingMaxAge)
  end
end

-- Milliseconds until the newest entry of a zset leaves the window (0 when empty).
local function newestAge(zset, now, window)
  local newest = redis.call('ZRANGE', zset, -1, -1, 'WITHSCORES')
  if #newest == 0 then return 0 end
  return tonumber(newest[2]) + window - now
end

local function touch(R, T, H, P, ttl)
  for _, name in ipairs({R, T, H, P}) do redis.call('PEXPIRE', name, ttl) end
end

-- Settles one charge with the tokens actually used; idempotent (the `s:<id>` mark). A charge that
-- already left the window charges only an excess, at `now`. `window` nil: the length H records.
-- Returns outcome ('settled' | 'already_settled' | 'unknown_reservation'), delta, tokens in window.
local function settleCharge(R, T, H, P, id, actual, now, window, pendingMaxAge)
  window = window or tonumber(redis.call('HGET', H, 'window_ms')) or DEFAULT_WINDOW_MS
  expire(R, T, H, P, now, window, pendingMaxAge)
  local reserved = tonumber(redis.call('HGET', H, 't:' .. id))
  local outcome, delta = 'unknown_reservation', 0
  if reserved == nil then
    outcome = 'unknown_reservation'
  elseif redis.call('HEXISTS', H, 's:' .. id) == 1 then
    outcome = 'already_settled'
  elseif redis.call('ZSCORE', T, id) then
    delta = actual - reserved
    redis.call('HSET', H, 't:' .. id, actual, 's:' .. id, 1)
    redis.call('HINCRBY', H, 'total', delta)
    outcome = 'settled'
  else
    -- The charge left the window before settling: a refund is moot, an excess is charged now.
    redis.call('ZREM', P, id)
    delta = math.max(0, actual - reserved)
    if delta > 0 then
      redis.call('ZADD', T, now, id)
      redis.call('HSET', H, 't:' .. id, delta, 's:' .. id, 1)
      redis.call('HINCRBY', H, 'total', delta)
    else
      redis.call('HDEL', H, 't:' .. id)
    end
    outcome = 'settled'
  end
  if outcome == 'settled' then touch(R, T, H, P, window + pendingMaxAge) end
  return outcome, delta, tonumber(redis.call('HGET', H, 'total')) or 0
end
