-- The whole CheckKey decision in one round trip: look the key up, check it is live, record its
-- use (at most every last_used_interval_ms), then decide and reserve atomically: the budgets first
-- (metering's spend hash of the key, in the same slot, less what the requests in flight hold), then
-- the window's limits. An allowed request holds its cost bound against each budget that applies
-- (lib/budget-holds.lua) until metering meters it or it ends without usage. For a member of
-- a team the team's budgets and window count too, in the same step: a request is allowed only when
-- both the key's and the team's allow it, and is then counted in both windows. A model outside
-- an allow-list that applies (the key's `allowed_models`, its team's) is refused before anything
-- is counted.
-- KEYS: the key's record, its window R, T, H, P, its spend hash S and its budget holds Z (one
-- slot: the key id's); for a member of a team, then the team's record, its window R, T, H, P, its
-- spend hash and its budget holds (the team's slot, which holds the member's own keys too).
-- args: reservation (charge id), reserve (tokens), bound (the request's cost bound in pico-USD, a
-- decimal string; '0' holds nothing), hold_ms (how long a hold lasts unreleased), spend_ttl_ms,
-- now ('' = Redis TIME), window_ms,
-- pending_max_age_ms, mode ('reserve' | 'peek'), last_used_interval_ms, plans (JSON: plan name ->
-- [requests, tokens, daily budget, monthly budget], -1 unlimited, budgets in micro-USD), model (the
-- catalog id asked for; '' checks none).
-- Returns name/value pairs, decoded by check-quota.ts: status ('unknown_key' | 'revoked' |
-- 'allow' | 'already_reserved' | 'deny_requests' | 'deny_tokens' | 'too_large' | 'over_budget' |
-- 'model_not_allowed'), then, for a live key, its facts, the window's and budgets' state, its
-- allow-lists (model_allow_lists: a JSON array of the lists, each as stored: the key's, then its
-- team's), whether the request log keeps its bodies (log_bodies 0 | 1: the key's or its team's), and its team's state (limited_by 'team' when the team's limit, budget or list denied).
local function hash(name)
  local flat = redis.call('HGETALL', name)
  local record = {}
  for i = 1, #flat, 2 do record[flat[i]] = flat[i + 1] end
  return record
end
local key = hash(KEYS[1])
if not key.key_id then return {'status', 'unknown_key'} end
if key.revoked == '1' then return {'status', 'revoked', 'key_id', key.key_id} end
local limits = key.plan and cjson.decode(args.plans)[key.plan]
if type(limits) ~= 'table' then return {'status', 'unknown_key'} end
local team = nil
if #KEYS >= 14 then
  team = hash(KEYS[8])
  -- A team is deleted only once its keys are revoked: a live key without its team is no key.
  if not team.team_id then return {'status', 'unknown_key'} end
end
local function override(value, default)
  if value == nil then return default end
  if value == 'unlimited' then return -1 end
  return tonumber(value) or default
end
local requestLimit = override(key.requests_per_minute_override, tonumber(limits[1]))
local tokenLimit = override(key.tokens_per_minute_override, tonumber(limits[2]))
local dailyBudget = override(key.daily_budget_override, tonumber(limits[3]))
local monthlyBudget = override(key.monthly_budget_override, tonumber(limits[4]))
-- A team's limits: a number, else none.
local teamRequestLimit, teamTokenLimit, teamDaily, teamMonthly = -1, -1, -1, -1
if team then
  teamRequestLimit = override(team.requests_per_minute, -1)
  teamTokenLimit = override(team.tokens_per_minute, -1)
  teamDaily = override(team.daily_budget, -1)
  teamMonthly = override(team.monthly_budget, -1)
end
-- The key's catalog fallbacks override travels with the one lookup: 'plan' when it has none.
local fallbacks = 'plan'
if key.catalog_fallbacks_override == '1' then fallbacks = 'on' elseif key.catalog_fallbacks_override == '0' then fallbacks = 'off' end
-- The allow-lists that apply, as stored (JSON arrays) and decoded; none: every model.
local allowTexts = {}
if key.allowed_models then allowTexts[#allowTexts + 1] = key.allowed_models end
if team and team.allowed_models then allowTexts[#allowTexts + 1] = team.allowed_models end
local allowLists = {}
for i, text in ipairs(allowTexts) do allowLists[i] = cjson.decode(text) end
-- The request log keeps the request's bodies when the key or its team says so.
local logBodies = 0
if key.log_bodies == '1' or (team and team.log_bodies == '1') then logBodies = 1 end
local now = clock(args.now)
if now - (tonumber(key.last_used_at_ms) or 0) >= tonumber(args.last_used_interval_ms) then redis.call('HSET', KEYS[1], 'last_used_at_ms', now) end

-- Budgets: what is left of each is the budget less what was spent today and this month (as metered
-- so far) and what the requests in flight hold (micro-USD budgets against pico-USD spend);
-- remaining is the smaller of what is left of the day's and the month's. A request may start when
-- its cost bound fits in what is left, or, when nothing is in flight, while anything is left (a
-- request alone may overshoot by its own cost, as before bounds were held, so that a bound larger
-- than the remainder does not lock out what is left). Returns budgeted (0 | 1), remaining, spent
-- today, spent this month, month exhausted (0 | 1) (by what was spent: holds end soon), held.
local bound = args.bound or '0'
local boundAmount = tonumber(bound) or 0
local function budgetState(S, Z, daily, monthly)
  if daily < 0 and monthly < 0 then return 0, 0, 0, 0, 0, 0 end
  local spentDay, spentMonth = spent(S, now)
  local held = heldNow(S, Z, now)
  local remaining, monthExhausted = -1, 0
  if daily >= 0 then remaining = daily * 1000000 - spentDay end
  if monthly >= 0 then
    local left = monthly * 1000000 - spentMonth
    if left <= 0 then monthExhausted = 1 end
    if remaining < 0 or left < remaining then remaining = left end
  end
  remaining = remaining - held
  if remaining < 0 then remaining = 0 end
  return 1, remaining, spentDay, spentMonth, monthExhausted, held
end
local budget = {budgetState(KEYS[6], KEYS[7], dailyBudget, monthlyBudget)}
local teamBudget = {0, 0, 0, 0, 0, 0}
if team then teamBudget = {budgetState(KEYS[13], KEYS[14], teamDaily, teamMonthly)} end
-- An allowed request's hold on each budget that applies (in the team's under `<key_id>:<charge
-- id>`, as its window charges). The remaining reported is what was left when it started: net of
-- the other requests in flight, not of its own bound.
local function holdBudgets()
  if boundAmount <= 0 then return end
  local lapsesAt = now + tonumber(args.hold_ms)
  if budget[1] == 1 then
    hold(KEYS[6], KEYS[7], args.reservation, bound, lapsesAt, tonumber(args.hold_ms), tonumber(args.spend_ttl_ms))
  end
  if teamBudget[1] == 1 then
    hold(KEYS[13], KEYS[14], key.key_id .. ':' .. args.reservation, bound, lapsesAt, tonumber(args.hold_ms), tonumber(args.spend_ttl_ms))
  end
end

-- The state of each window after the decision: {count, request reset, total, token reset}.
local keyState, teamState = {0, 0, 0, 0}, {0, 0, 0, 0}
local function answer(status, retry, limitedBy)
  local reply = {
    'status', status, 'key_id', key.key_id, 'plan', key.plan, 'routing_policy', key.routing_policy or '',
    'request_limit', requestLimit, 'requests_in_window', keyState[1], 'request_reset_ms', keyState[2],
    'token_limit', tokenLimit, 'tokens_in_window', keyState[3], 'token_reset_ms', keyState[4],
    'retry_after_ms', retry, 'catalog_fallbacks', fallbacks, 'budgeted', budget[1],
    'remaining_pico_usd', budget[2], 'spent_day_pico_usd', budget[3], 'spent_month_pico_usd', budget[4],
    'month_exhausted', budget[5], 'limited_by', limitedBy,
    'model_allow_lists', '[' .. table.concat(allowTexts, ',') .. ']',
    'log_bodies', logBodies,
  }
  -- The team's state only for a member: a key without a team gets a reply no longer than before teams.
  if key.team_id and key.team_id ~= '' then
    local teamPart = {
      'team_id', key.team_id,
      'team_request_limit', teamRequestLimit, 'team_requests_in_window', teamState[1], 'team_request_reset_ms', teamState[2],
      'team_token_limit', teamTokenLimit, 'team_tokens_in_window', teamState[3], 'team_token_reset_ms', teamState[4],
      'team_budgeted', teamBudget[1], 'team_remaining_pico_usd', teamBudget[2], 'team_spent_day_pico_usd', teamBudget[3],
      'team_spent_month_pico_usd', teamBudget[4], 'team_month_exhausted', teamBudget[5],
      'team_allowed_models', (team and team.allowed_models) or '',
    }
    for i = 1, #teamPart do reply[#reply + 1] = teamPart[i] end
  end
  return reply
end
if args.model ~= nil and args.model ~= '' and not modelAllowed(allowLists, args.model) then
  -- Refused by the team's list when the key's own allows the model.
  local byTeam = team and team.allowed_models and (not key.allowed_models or modelAllowed({allowLists[1]}, args.model))
  return answer('model_not_allowed', 0, byTeam and 'team' or 'key')
end
if args.mode == 'reserve' then
  for _, scope in ipairs({{budget, 'key'}, {teamBudget, 'team'}}) do
    local state = scope[1]
    if state[1] == 1 and (state[2] <= 0 or (boundAmount > state[2] and state[6] > 0)) then
      local retry = 0
      if state[5] == 0 then retry = DAY_MS - now % DAY_MS end
      return answer('over_budget', retry, scope[2])
    end
  end
end
local keyLimited = requestLimit >= 0 or tokenLimit >= 0
local teamLimited = teamRequestLimit >= 0 or teamTokenLimit >= 0
if not keyLimited and not teamLimited then
  requestLimit, tokenLimit = -1, -1
  if args.mode == 'reserve' then holdBudgets() end
  return answer('allow', 0, '')
end

local window, pendingMaxAge = tonumber(args.window_ms), tonumber(args.pending_max_age_ms)
local id, reserve = args.reservation, tonumber(args.reserve)
-- A window: its keys, its limits and the id its charges are kept under there. A member's charges
-- are counted in its own window too (whether or not the key has limits), so a settlement finds them
-- there; in the team's window they are kept under `<key_id>:<charge id>`.
local windows = {{R = KEYS[2], T = KEYS[3], H = KEYS[4], P = KEYS[5], requests = requestLimit, tokens = tokenLimit, id = id, state = keyState, scope = 'key'}}
if teamLimited then
  windows[2] = {R = KEYS[9], T = KEYS[10], H = KEYS[11], P = KEYS[12], requests = teamRequestLimit, tokens = teamTokenLimit, id = key.key_id .. ':' .. id, state = teamState, scope = 'team'}
end
for _, w in ipairs(windows) do
  expire(w.R, w.T, w.H, w.P, now, window, pendingMaxAge)
  w.count = redis.call('ZCARD', w.R)
  w.total = tonumber(redis.call('HGET', w.H, 'total')) or 0
end
-- How long until a window lets this request in: status ('allow' | 'deny_requests' | 'deny_tokens'
-- | 'too_large') and the wait.
local function assess(w)
  if w.tokens >= 0 and reserve > w.tokens then return 'too_large', 0 end
  local requestWait, tokenWait = -1, -1
  if w.requests >= 0 and w.count >= w.requests then
    local entry = redis.call('ZRANGE', w.R, w.count - w.requests, w.count - w.requests, 'WITHSCORES')
    requestWait = tonumber(entry[2]) + window - now
  end
  if w.tokens >= 0 and w.total + reserve > w.tokens then
    local need = w.total + reserve - w.tokens
    local entries = redis.call('ZRANGE', w.T, 0, -1, 'WITHSCORES')
    local freed = 0
    tokenWait = window
    for i = 1, #entries, 2 do
      freed = freed + (tonumber(redis.call('HGET', w.H, 't:' .. entries[i])) or 0)
      if freed >= need then tokenWait = tonumber(entries[i + 1]) + window - now; break end
    end
  end
  if requestWait < 0 and tokenWait < 0 then return 'allow', 0 end
  if requestWait >= tokenWait then return 'deny_requests', requestWait end
  return 'deny_tokens', tokenWait
end
local function report()
  for _, w in ipairs(windows) do
    w.state[1], w.state[2], w.state[3], w.state[4] = w.count, newestAge(w.R, now, window), w.total, newestAge(w.T, now, window)
  end
end
if args.mode == 'reserve' then
  if redis.call('HEXISTS', KEYS[4], 't:' .. id) == 1 then
    report()
    return answer('already_reserved', 0, '')
  end
  -- Refused by the window that would keep the request out the longest (too large: at once).
  local denied, deniedRetry, deniedBy = nil, -1, ''
  for _, w in ipairs(windows) do
    local status, retry = assess(w)
    if status == 'too_large' then
      report()
      return answer(status, 0, w.scope)
    end
    if status ~= 'allow' and retry > deniedRetry then denied, deniedRetry, deniedBy = status, retry, w.scope end
  end
  if denied then
    report()
    return answer(denied, deniedRetry, deniedBy)
  end
  for _, w in ipairs(windows) do
    redis.call('ZADD', w.R, now, w.id)
    redis.call('ZADD', w.T, now, w.id)
    -- The window's length goes with the charges, so that a settlement elsewhere (metering's)
    -- expires them by the same rule.
    redis.call('HSET', w.H, 't:' .. w.id, reserve, 'window_ms', window)
    redis.call('HINCRBY', w.H, 'total', reserve)
    w.count = w.count + 1
    w.total = w.total + reserve
    touch(w.R, w.T, w.H, w.P, window + pendingMaxAge)
  end
  holdBudgets()
end
report()
return answer('allow', 0, '')
