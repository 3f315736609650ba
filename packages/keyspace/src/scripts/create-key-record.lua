-- Writes a key's record unless one is there already: a new key (its id may collide, 1 in 62^16)
-- or a record of the earlier layout moved to its place. For a member of a team, only while the
-- team exists, and the key joins the team's set of live keys in the same step (so a team is never
-- deleted under a key being created in it).
-- KEYS: the record; for a member of a team, then the team's record and its set of live keys (one
-- slot). ARGV: field/value pairs.
-- Returns name/value pairs, decoded by key-record.ts: outcome ('created' | 'exists' | 'no_team').
if redis.call('EXISTS', KEYS[1]) == 1 then return {'outcome', 'exists'} end
if #KEYS >= 3 and redis.call('EXISTS', KEYS[2]) == 0 then return {'outcome', 'no_team'} end
redis.call('HSET', KEYS[1], unpack(ARGV))
if #KEYS >= 3 then
  local keyId = redis.call('HGET', KEYS[1], 'key_id')
  if keyId then redis.call('SADD', KEYS[3], keyId) end
end
return {'outcome', 'created'}
