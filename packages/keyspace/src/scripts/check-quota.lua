-- The whole CheckKey decision in one round trip: look the key up, check it is live, record its
-- use (at most every last_used_interval_ms), then decide and reserve atomically: the budgets first
-- (metering's spend hash of the key, in the same slot), then the window's limits. A model outside
-- an allow-list that applies (the key's `allowed_models`) is refused before anything is counted.
-- KEYS: the key's record, its window R, T, H, P, its spend hash S (one slot: the key id's).
-- args: reservation (charge id), reserve (tokens), now ('' = Redis TIME), window_ms,
-- pending_max_age_ms, mode ('reserve' | 'peek'), last_used_interval_ms, plans (JSON: plan name ->
-- [requests, tokens, daily budget, monthly budget], -1 unlimited, budgets in micro-USD), model (the
-- catalog id asked for; '' checks none).
-- Returns name/value pairs, decoded by check-quota.ts: status ('unknown_key' | 'revoked' |
-- 'allow' | 'already_reserved' | 'deny_requests' | 'deny_tokens' | 'too_large' | 'over_budget' |
-- 'model_not_allowed'), then, for a live key, its facts, the window's and budgets' state and its
-- allow-lists (model_allow_lists: a JSON array of the lists, each as stored).
local record = redis.call('HGETALL', KEYS[1])
local key = {}
for i = 1, #record, 2 do key[record[i]] = record[i + 1] end
if not key.key_id then return {'status', 'unknown_key'} end
if key.revoked == '1' then return {'status', 'revoked', 'key_id', key.key_id} end
local limits = key.plan and cjson.decode(args.plans)[key.plan]
if type(limits) ~= 'table' then return {'status', 'unknown_key'} end
local function override(value, default)
  if value == nil then return default end
  if value == 'unlimited' then return -1 end
  return tonumber(value) or default
end
local requestLimit = override(key.requests_per_minute_override, tonumber(limits[1]))
local tokenLimit = override(key.tokens_per_minute_override, tonumber(limits[2]))
local dailyBudget = override(key.daily_budget_override, tonumber(limits[3]))
local monthlyBudget = override(key.monthly_budget_override, tonumber(limits[4]))
-- The key's catalog fallbacks override travels with the one lookup: 'plan' when it has none.
local fallbacks = 'plan'
if key.catalog_fallbacks_override == '1' then fallbacks = 'on' elseif key.catalog_fallbacks_override == '0' then fallbacks = 'off' end
-- The allow-lists that apply, as stored (JSON arrays) and decoded; none: every model.
local allowTexts = {}
if key.allowed_models then allowTexts[#allowTexts + 1] = key.allowed_models end
local allowLists = {}
for i, text in ipairs(allowTexts) do allowLists[i] = cjson.decode(text) end
local now = clock(args.now)
if now - (tonumber(key.last_used_at_ms) or 0) >= tonumber(args.last_used_interval_ms) then redis.call('HSET', KEYS[1], 'last_used_at_ms', now) end

-- Budgets: a request may start while what the key spent today and this month (as metered so
-- far) is below each budget; remaining is the smaller of what is left (micro-USD budgets against
-- pico-USD spend).
local budgeted, remaining, spentDay, spentMonth, monthExhausted = 0, 0, 0, 0, 0
if dailyBudget >= 0 or monthlyBudget >= 0 then
  budgeted = 1
  spentDay, spentMonth = spent(KEYS[6], now)
  remaining = -1
  if dailyBudget >= 0 then remaining = dailyBudget * 1000000 - spentDay end
  if monthlyBudget >= 0 then
    local left = monthlyBudget * 1000000 - spentMonth
    if left <= 0 then monthExhausted = 1 end
    if remaining < 0 or left < remaining then remaining = left end
  end
  if remaining < 0 then remaining = 0 end
end
local function answer(status, count, requestReset, total, tokenReset, retry)
  return {
    'status', status, 'key_id', key.key_id, 'plan', key.plan, 'routing_policy', key.routing_policy or '',
    'request_limit', requestLimit, 'requests_in_window', count, 'request_reset_ms', requestReset,
    'token_limit', tokenLimit, 'tokens_in_window', total, 'token_reset_ms', tokenReset,
    'retry_after_ms', retry, 'catalog_fallbacks', fallbacks, 'budgeted', budgeted,
    'remaining_pico_usd', remaining, 'spent_day_pico_usd', spentDay, 'spent_month_pico_usd', spentMonth,
    'month_exhausted', monthExhausted, 'model_allow_lists', '[' .. table.concat(allowTexts, ',') .. ']',
  }
end
if args.model ~= nil and args.model ~= '' and not modelAllowed(allowLists, args.model) then
  return answer('model_not_allowed', 0, 0, 0, 0, 0)
end
if budgeted == 1 and remaining <= 0 and args.mode == 'reserve' then
  local retry = 0
  if monthExhausted == 0 then retry = DAY_MS - now % DAY_MS end
  return answer('over_budget', 0, 0, 0, 0, retry)
end
if requestLimit < 0 and tokenLimit < 0 then
  requestLimit, tokenLimit = -1, -1
  return answer('allow', 0, 0, 0, 0, 0)
end

local window, pendingMaxAge = tonumber(args.window_ms), tonumber(args.pending_max_age_ms)
local R, T, H, P = KEYS[2], KEYS[3], KEYS[4], KEYS[5]
expire(R, T, H, P, now, window, pendingMaxAge)
local id, reserve = args.reservation, tonumber(args.reserve)
local count = redis.call('ZCARD', R)
local total = tonumber(redis.call('HGET', H, 'total')) or 0
local status, retry = 'allow', 0
if args.mode == 'reserve' then
  if redis.call('HEXISTS', H, 't:' .. id) == 1 then
    status = 'already_reserved'
  elseif tokenLimit >= 0 and reserve > tokenLimit then
    status = 'too_large'
  else
    local requestWait, tokenWait = -1, -1
    if requestLimit >= 0 and count >= requestLimit then
      local entry = redis.call('ZRANGE', R, count - requestLimit, count - requestLimit, 'WITHSCORES')
      requestWait = tonumber(entry[2]) + window - now
    end
    if tokenLimit >= 0 and total + reserve > tokenLimit then
      local need = total + reserve - tokenLimit
      local entries = redis.call('ZRANGE', T, 0, -1, 'WITHSCORES')
      local freed = 0
      tokenWait = window
      for i = 1, #entries, 2 do
        freed = freed + (tonumber(redis.call('HGET', H, 't:' .. entries[i])) or 0)
        if freed >= need then tokenWait = tonumber(entries[i + 1]) + window - now; break end
      end
    end
    if requestWait >= 0 or tokenWait >= 0 then
      if requestWait >= tokenWait then status = 'deny_requests'; retry = requestWait else status = 'deny_tokens'; retry = tokenWait end
    else
      redis.call('ZADD', R, now, id)
      redis.call('ZADD', T, now, id)
      -- The window's length goes with the charges, so that a settlement elsewhere (metering's)
      -- expires them by the same rule.
      redis.call('HSET', H, 't:' .. id, reserve, 'window_ms', window)
      redis.call('HINCRBY', H, 'total', reserve)
      count = count + 1
      total = total + reserve
      touch(R, T, H, P, window + pendingMaxAge)
    end
  end
end
return answer(status, count, newestAge(R, now, window), total, newestAge(T, now, window), retry)
