-- Keeps the store within its total bound: records a stored response's size (when `member` is
-- given), forgets those deleted or evicted by their key, then forgets the oldest while the total
-- is over the bound (never the one just stored).
-- KEYS: the store's index (zset), its sizes (hash): one slot, `{responses}`.
-- args: member (`<key_id>:<response_id>` just stored, or '' for none), bytes, now (Unix ms),
-- ttl_ms, max_bytes (0: none), removed (members deleted or evicted, space-separated).
-- Returns name/value pairs: dropped (the members forgotten for the bound, space-separated: the
-- caller deletes each from its key), total (bytes after).
local now = tonumber(args.now)
local maxBytes = tonumber(args.max_bytes)
forgetExpired(KEYS[1], KEYS[2], now - tonumber(args.ttl_ms))
for member in string.gmatch(args.removed, '%S+') do forget(KEYS[1], KEYS[2], member) end
local total = tonumber(redis.call('HGET', KEYS[2], 'total') or '0')
if args.member ~= '' then total = remember(KEYS[1], KEYS[2], args.member, tonumber(args.bytes), now) end
local dropped = evictOldest(KEYS[1], KEYS[2], args.member, total, function(bytes)
  return maxBytes > 0 and bytes > maxBytes
end)
redis.call('PEXPIRE', KEYS[1], tonumber(args.ttl_ms))
redis.call('PEXPIRE', KEYS[2], tonumber(args.ttl_ms))
return {'dropped', table.concat(dropped, ' '), 'total', tonumber(redis.call('HGET', KEYS[2], 'total') or '0')}
