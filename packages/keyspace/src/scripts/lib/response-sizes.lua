-- Sizes of stored responses (used by the response-* scripts): an index (zset: member -> when it
-- was stored, Unix ms) and its sizes (hash: member -> bytes, and `total`), whose total only these
-- functions change.

-- Forgets one member of an index and its size; returns the total after.
local function forget(index, sizes, member)
  local size = tonumber(redis.call('HGET', sizes, member) or '0')
  redis.call('ZREM', index, member)
  if redis.call('HDEL', sizes, member) == 1 and size ~= 0 then
    return redis.call('HINCRBY', sizes, 'total', -size)
  end
  return tonumber(redis.call('HGET', sizes, 'total') or '0')
end

-- Forgets the members stored before `before` (their responses expired), 1,000 at most per call.
local function forgetExpired(index, sizes, before)
  local expired = redis.call('ZRANGEBYSCORE', index, '-inf', '(' .. before, 'LIMIT', 0, 1000)
  for _, member in ipairs(expired) do forget(index, sizes, member) end
  return #expired
end

-- Adds one member of `bytes` stored at `now` (or 1 ms after the newest, so that the order of the
-- index is the order of storing); returns the total after.
local function remember(index, sizes, member, bytes, now)
  forget(index, sizes, member)
  local newest = redis.call('ZRANGE', index, -1, -1, 'WITHSCORES')
  if newest[2] and tonumber(newest[2]) >= now then now = tonumber(newest[2]) + 1 end
  redis.call('ZADD', index, now, member)
  redis.call('HSET', sizes, member, bytes)
  return redis.call('HINCRBY', sizes, 'total', bytes)
end

-- Forgets the oldest members but `keep` while `over(total, count)` holds; returns them.
local function evictOldest(index, sizes, keep, total, over)
  local evicted = {}
  while over(total, redis.call('ZCARD', index)) do
    local oldest = redis.call('ZRANGE', index, 0, 1)
    local victim = oldest[1]
    if victim == keep then victim = oldest[2] end
    if not victim then break end
    total = forget(index, sizes, victim)
    evicted[#evicted + 1] = victim
  end
  return evicted
end
