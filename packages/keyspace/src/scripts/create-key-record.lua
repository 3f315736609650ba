-- Writes a key's record unless one is there already: a new key (its id may collide, 1 in 62^16)
-- or a record of the earlier layout moved to its place. KEYS: the record. ARGV: field/value pairs.
-- Returns name/value pairs, decoded by key-record.ts: outcome ('created' | 'exists').
if redis.call('EXISTS', KEYS[1]) == 1 then return {'outcome', 'exists'} end
redis.call('HSET', KEYS[1], unpack(ARGV))
return {'outcome', 'created'}
