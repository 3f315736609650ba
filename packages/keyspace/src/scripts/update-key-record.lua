-- Changes fields of a key's record (or a team's) only if it exists, so an update never creates a
-- partial one. KEYS: the record; for a member of a team, then the team's set of live keys (one
-- slot), which the key leaves when the update revokes it.
-- ARGV: count of fields to delete, those fields, then field/value pairs to set.
-- Returns the record after the update as field/value pairs (HGETALL's reply), or none when the
-- record does not exist; decoded by key-record.ts.
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
local deletes = tonumber(ARGV[1])
if deletes > 0 then redis.call('HDEL', KEYS[1], unpack(ARGV, 2, 1 + deletes)) end
if #ARGV > 1 + deletes then redis.call('HSET', KEYS[1], unpack(ARGV, 2 + deletes)) end
if #KEYS >= 2 and redis.call('HGET', KEYS[1], 'revoked') == '1' then
  redis.call('SREM', KEYS[2], redis.call('HGET', KEYS[1], 'key_id'))
end
return redis.call('HGETALL', KEYS[1])
