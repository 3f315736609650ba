-- Sizes of stored responses (used by the response-* scripts): an index (zset: member -> when it
-- was answered, Unix ms) and its sizes (hash: member -> bytes, and `total`), whose total only these
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

-- Adds one member of `bytes` answered at `now`, or on the first free millisecond after it (members
-- of the same millisecond keep the order of storing, and an earlier answer stored later still
-- sorts before the later ones); returns the total after.
local function remember(index, sizes, member, bytes, now)
  forget(index, sizes, member)
  while #redis.call('ZRANGEBYSCORE', index, now, now, 'LIMIT', 0, 1) > 0 do now = now + 1 end
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
