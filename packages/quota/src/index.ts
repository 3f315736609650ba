/**
 * The sliding-window quota kept in Redis, as Lua shared by every script that touches it: auth's
 * decision (CheckKey) and settlement (SettleUsage), and metering, which settles a request's
 * reservation in the same atomic step that meters its usage event. One source, so the window's
 * rules cannot drift between the services that apply them.
 *
 * The window of one API key: R, a zset request id -> allowed at (ms); T, a zset charge id ->
 * charged at (ms); H, a hash `t:<id>` -> tokens charged, `s:<id>` -> settled, `total` -> sum of
 * the charges in T; P, a zset of unsettled charges that left T, kept until PENDING_MAX_AGE_MS for
 * a late settlement. Every name carries the key id as a hash tag, so one key's data lives in one
 * cluster slot.
 */

/**
 * The quota window: a sliding log of exactly one minute. At any instant, the requests allowed in
 * the preceding 60,000 ms number at most the key's requests per minute, and the tokens charged to
 * them sum to at most its tokens per minute. A request is charged at the instant it is allowed
 * (Redis's clock, shared by every replica); settlement changes its charge, never its instant.
 */
export const WINDOW_MS = 60_000;

/**
 * How long an unsettled reservation that has left the window is remembered, so that a settlement
 * arriving after a long stream still finds it (and charges any excess once). Longer than the
 * edge's longest completion (10 minutes by default).
 */
export const PENDING_MAX_AGE_MS = 15 * 60_000;

/** The prefix of auth's Redis keys, the window's included, unless a test chooses another. */
export const DEFAULT_QUOTA_PREFIX = 'auth:';

/** A reservation id as CheckKey returns it: `<key id>:<part>`, the part chosen by the caller. */
export const RESERVATION_PATTERN = /^(key_[A-Za-z0-9]{16}):([A-Za-z0-9_-]{1,64})$/;

/**
 * The names of one key's window, [R, T, H, P]: `<prefix>window:{<key id>}:requests|tokens|charges|
 * pending`. A script that touches them declares them (Redis Cluster routes a script by its declared
 * keys, and they share the key id's hash tag, so they share a slot with the key's record).
 */
export function windowKeyNames(prefix: string, keyId: string): [string, string, string, string] {
  const base = `${prefix}window:{${keyId}}:`;
  return [`${base}requests`, `${base}tokens`, `${base}charges`, `${base}pending`];
}

/**
 * The Lua functions of the window, on the names windowKeyNames gives: clock(given) (Redis TIME
 * when given is ''), expire(R, T, H, P, now, window, pendingMaxAge), newestAge(zset, now, window),
 * touch(R, T, H, P, ttl), and settleCharge(R, T, H, P, id, actual, now, window, pendingMaxAge),
 * which settles one charge with the tokens actually used and returns {outcome, delta,
 * tokensInWindow}: outcome 1 settled, 2 already settled, 3 unknown. Settling is idempotent (the
 * `s:<id>` mark); a charge that already left the window charges only an excess, at `now`.
 */
export const WINDOW_LUA = `

local function clock(given)
  if given ~= '' then return tonumber(given) end
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

-- An entry charged at t counts while now < t + window.
local function expire(R, T, H, P, now, window, pendingMaxAge)
  local cutoff = now - window
  redis.call('ZREMRANGEBYSCORE', R, '-inf', cutoff)
  local old = redis.call('ZRANGEBYSCORE', T, '-inf', cutoff, 'WITHSCORES')
  if #old > 0 then
    local freed = 0
    for i = 1, #old, 2 do
      local id = old[i]
      freed = freed + (tonumber(redis.call('HGET', H, 't:' .. id)) or 0)
      if redis.call('HEXISTS', H, 's:' .. id) == 1 then
        redis.call('HDEL', H, 't:' .. id, 's:' .. id)
      else
        redis.call('ZADD', P, old[i + 1], id)
      end
    end
    redis.call('ZREMRANGEBYSCORE', T, '-inf', cutoff)
    redis.call('HINCRBY', H, 'total', -freed)
  end
  local stale = redis.call('ZRANGEBYSCORE', P, '-inf', now - pendingMaxAge)
  if #stale > 0 then
    for i = 1, #stale do redis.call('HDEL', H, 't:' .. stale[i]) end
    redis.call('ZREMRANGEBYSCORE', P, '-inf', now - pendingMaxAge)
  end
end

local function newestAge(zset, now, window)
  local newest = redis.call('ZRANGE', zset, -1, -1, 'WITHSCORES')
  if #newest == 0 then return 0 end
  return tonumber(newest[2]) + window - now
end

local function touch(R, T, H, P, ttl)
  for _, name in ipairs({R, T, H, P}) do redis.call('PEXPIRE', name, ttl) end
end

local function settleCharge(R, T, H, P, id, actual, now, window, pendingMaxAge)
  expire(R, T, H, P, now, window, pendingMaxAge)
  local reserved = tonumber(redis.call('HGET', H, 't:' .. id))
  local outcome, delta = 3, 0
  if reserved == nil then
    outcome = 3
  elseif redis.call('HEXISTS', H, 's:' .. id) == 1 then
    outcome = 2
  elseif redis.call('ZSCORE', T, id) then
    delta = actual - reserved
    redis.call('HSET', H, 't:' .. id, actual, 's:' .. id, 1)
    redis.call('HINCRBY', H, 'total', delta)
    outcome = 1
  else
    -- The charge left the window before settling: a refund is moot, an excess is charged now.
    redis.call('ZREM', P, id)
    delta = math.max(0, actual - reserved)
    if delta > 0 then
      redis.call('ZADD', T, now, id)
      redis.call('HSET', H, 't:' .. id, delta, 's:' .. id, 1)
      redis.call('HINCRBY', H, 'total', delta)
    else
      redis.call('HDEL', H, 't:' .. id)
    end
    outcome = 1
  end
  if outcome == 1 then touch(R, T, H, P, window + pendingMaxAge) end
  return {outcome, delta, tonumber(redis.call('HGET', H, 'total')) or 0}
end
`;

export * from './spend.js';
