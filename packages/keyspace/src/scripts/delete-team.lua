-- Deletes a team that has no live key, with its quota window; its spend hash expires on its own.
-- KEYS: the team's record, its set of live keys, its window R, T, H, P (one slot: the team's).
-- Returns name/value pairs, decoded by key-record.ts: outcome ('deleted' | 'has_keys' | 'unknown').
if redis.call('EXISTS', KEYS[1]) == 0 then return {'outcome', 'unknown'} end
if redis.call('SCARD', KEYS[2]) > 0 then return {'outcome', 'has_keys'} end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6])
return {'outcome', 'deleted'}
