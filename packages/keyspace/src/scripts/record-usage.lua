-- Meters one usage event: adds it to the totals, its time buckets and the key's spend only if it
-- is new, remembers it, lists it among the key's latest requests, and settles the request's quota
-- reservation with the tokens it used and releases its budget holds (its cost now counts as spent,
-- in the same step): all or nothing, so a redelivered event (or a crash between
-- writes) can neither count nor settle twice, nor half. Every key is in the key's slot (its
-- team's, for a member of a team).
-- KEYS: the de-duplication set, key totals, key-and-model totals, the key's quota window R, T, H,
-- P, its spend hash, hourly bucket hash, daily bucket hash, latest-requests list, models set, its
-- budget holds; for a member of a team, then the team's quota window R, T, H, P, its spend hash,
-- its totals and its budget holds: the event counts in the team's totals and spend too, and its
-- charge is settled in the team's window and holds (as `<key_id>:<charge>`, args.key_id).
-- args (see record-usage.ts, which names each): the event (event_id, sequence, prompt_tokens,
-- completion_tokens, cached_tokens, cache_write_tokens, cost_pico_usd, model_id, errors, fallbacks,
-- cache_hits: 1 for an answer from the response cache, saved_cost_pico_usd: what that answer
-- cost when it was made), its settlement
-- (charge, '' for none; actual_tokens; pending_max_age_ms), the de-duplication record
-- (prune_through, 0 for none; dedup_ttl_ms), the buckets (hour_field, hourly_expires_at_ms,
-- day_field, daily_expires_at_ms, models_ttl_ms), the spend (spend_day_field, spend_month_field,
-- spend_day, spend_month, spend_ttl_ms) and the latest requests (recent, '' for none;
-- recent_kept, recent_ttl_ms).
-- Returns name/value pairs, decoded by record-usage.ts: outcome ('metered' | 'duplicate').
if redis.call('ZSCORE', KEYS[1], args.event_id) then return {'outcome', 'duplicate'} end
if args.prune_through ~= '0' then redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', args.prune_through) end
redis.call('ZADD', KEYS[1], args.sequence, args.event_id)
redis.call('PEXPIRE', KEYS[1], args.dedup_ttl_ms)
local team = #KEYS >= 20
local totals = {KEYS[2], KEYS[3]}
if team then totals[3] = KEYS[19] end
for _, name in ipairs(totals) do
  redis.call('HINCRBY', name, 'requests', 1)
  redis.call('HINCRBY', name, 'prompt_tokens', args.prompt_tokens)
  redis.call('HINCRBY', name, 'completion_tokens', args.completion_tokens)
  redis.call('HINCRBY', name, 'cached_tokens', args.cached_tokens)
  -- Only when not zero: the totals of a key that never writes a cache keep the fields they had.
  if args.cache_write_tokens ~= '0' then redis.call('HINCRBY', name, 'cache_write_tokens', args.cache_write_tokens) end
  redis.call('HINCRBY', name, 'cost_pico_usd', args.cost_pico_usd)
  -- The same for the response cache's hits and the cost they saved.
  if args.cache_hits ~= '0' then redis.call('HINCRBY', name, 'cache_hits', args.cache_hits) end
  if args.saved_cost_pico_usd ~= '0' then redis.call('HINCRBY', name, 'saved_cost_pico_usd', args.saved_cost_pico_usd) end
end
if args.charge ~= '' then
  -- The window's length is the one auth recorded with the charge.
  local now = clock('')
  settleCharge(KEYS[4], KEYS[5], KEYS[6], KEYS[7], args.charge, tonumber(args.actual_tokens), now, nil, tonumber(args.pending_max_age_ms))
  release(KEYS[8], KEYS[13], args.charge)
  if team then
    settleCharge(KEYS[14], KEYS[15], KEYS[16], KEYS[17], args.key_id .. ':' .. args.charge, tonumber(args.actual_tokens), now, nil, tonumber(args.pending_max_age_ms))
    release(KEYS[18], KEYS[20], args.key_id .. ':' .. args.charge)
  end
end
-- Time buckets: a field per count, only for counts that are not zero (most events have no cached
-- or cache-written tokens, error, fallback or cache hit). A bucket whose retention has passed
-- expires at once.
local counts = {
  {'p', args.prompt_tokens}, {'c', args.completion_tokens}, {'k', args.cached_tokens}, {'w', args.cache_write_tokens}, {'$', args.cost_pico_usd},
  {'e', args.errors}, {'f', args.fallbacks}, {'h', args.cache_hits}, {'s', args.saved_cost_pico_usd},
}
for _, bucket in ipairs({{KEYS[9], args.hour_field, args.hourly_expires_at_ms}, {KEYS[10], args.day_field, args.daily_expires_at_ms}}) do
  redis.call('HINCRBY', bucket[1], bucket[2] .. 'r', 1)
  for _, count in ipairs(counts) do
    if count[2] ~= '0' then redis.call('HINCRBY', bucket[1], bucket[2] .. count[1], count[2]) end
  end
  redis.call('PEXPIREAT', bucket[1], bucket[3])
end
redis.call('SADD', KEYS[12], args.model_id)
redis.call('PEXPIRE', KEYS[12], args.models_ttl_ms)
-- The key's spend per day and month (and its team's); a day's first spend forgets days before the
-- one before it.
local function addSpend(S)
  if redis.call('HEXISTS', S, args.spend_day_field) == 0 then
    for _, field in ipairs(redis.call('HKEYS', S)) do
      local kind, number = string.sub(field, 1, 1), tonumber(string.sub(field, 3)) or 0
      if (kind == 'd' and number < tonumber(args.spend_day) - 1) or (kind == 'm' and number < tonumber(args.spend_month) - 1) then redis.call('HDEL', S, field) end
    end
  end
  redis.call('HINCRBY', S, args.spend_day_field, args.cost_pico_usd)
  redis.call('HINCRBY', S, args.spend_month_field, args.cost_pico_usd)
  redis.call('PEXPIRE', S, args.spend_ttl_ms)
end
if args.cost_pico_usd ~= '0' then
  addSpend(KEYS[8])
  if team then addSpend(KEYS[18]) end
end
if args.recent ~= '' then
  redis.call('LPUSH', KEYS[11], args.recent)
  redis.call('LTRIM', KEYS[11], 0, tonumber(args.recent_kept) - 1)
  redis.call('PEXPIRE', KEYS[11], args.recent_ttl_ms)
end
return {'outcome', 'metered'}
