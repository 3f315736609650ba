-- Changes fields of a key's record only if it exists, so an update never creates a partial key.
-- KEYS: the record. ARGV: count of fields to delete, those fields, then field/value pairs to set.
-- Returns the record after the update as field/value pairs (HGETALL's reply), or none when the
-- key does not exist; decoded by key-record.ts.
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
local deletes = tonumber(ARGV[1])
if deletes > 0 then redis.call('HDEL', KEYS[1], unpack(ARGV, 2, 1 + deletes)) end
if #ARGV > 1 + deletes then redis.call('HSET', KEYS[1], unpack(ARGV, 2 + deletes)) end
return redis.call('HGETALL', KEYS[1])
