-- Stores one response of a key, then keeps the key within its bound by forgetting its oldest
-- responses (never the one just stored).
-- KEYS: the response's hash, the key's index (zset), the key's sizes (hash): one slot, the key id's.
-- args: id (the response id), response, input (JSON), bytes (their stored size), now (Unix ms),
-- ttl_ms, max_count, max_bytes (the key's bound; 0: none).
-- Returns name/value pairs: evicted (the response ids forgotten, space-separated; their hashes are
-- for the caller to delete), expired (how many listed responses had expired and were forgotten).
local now = tonumber(args.now)
local ttl = tonumber(args.ttl_ms)
local maxCount = tonumber(args.max_count)
local maxBytes = tonumber(args.max_bytes)
-- The response first: on a Redis over its maxmemory this first write is refused and the script
-- writes nothing (Redis lets a script that has written once write on past maxmemory).
redis.call('HSET', KEYS[1], 'response', args.response, 'input', args.input)
redis.call('PEXPIRE', KEYS[1], ttl)
local expired = forgetExpired(KEYS[2], KEYS[3], now - ttl)
local total = remember(KEYS[2], KEYS[3], args.id, tonumber(args.bytes), now)
local evicted = evictOldest(KEYS[2], KEYS[3], args.id, total, function(bytes, count)
  return (maxCount > 0 and count > maxCount) or (maxBytes > 0 and bytes > maxBytes)
end)
-- The index and sizes outlive every response they list.
redis.call('PEXPIRE', KEYS[2], ttl)
redis.call('PEXPIRE', KEYS[3], ttl)
return {'evicted', table.concat(evicted, ' '), 'expired', expired}
