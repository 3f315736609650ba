-- Deletes one response of a key and forgets its size.
-- KEYS: the response's hash, the key's index (zset), the key's sizes (hash): one slot, the key id's.
-- args: id (the response id).
-- Returns name/value pairs: deleted (1 when the response existed, else 0).
local deleted = redis.call('DEL', KEYS[1])
forget(KEYS[2], KEYS[3], args.id)
return {'deleted', deleted}
