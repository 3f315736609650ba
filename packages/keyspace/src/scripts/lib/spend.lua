-- A key's spend per UTC day and month (see ../../spend.ts, whose arithmetic this mirrors).
-- utcDay(ms): days since 1970-01-01; utcMonth(ms): year * 12 + (month - 1), through the
-- civil-from-days algorithm (H. Hinnant's, exact for every Gregorian date).

-- Milliseconds in a UTC day (DAY_MS).
local DAY_MS = 86400000

local function utcDay(ms) return math.floor(ms / DAY_MS) end
local function utcMonth(ms)
  local z = utcDay(ms) + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local month = mp < 10 and mp + 3 or mp - 9
  local year = yoe + era * 400
  if month <= 2 then year = year + 1 end
  return year * 12 + month - 1
end

-- The day's and the month's spend of spend hash S at `now`, in pico-USD as Lua numbers (doubles:
-- exact to the pico-dollar below 9,007 USD, and within a few pico-dollars above).
local function spent(S, now)
  local values = redis.call('HMGET', S, 'd:' .. utcDay(now), 'm:' .. utcMonth(now))
  return tonumber(values[1]) or 0, tonumber(values[2]) or 0
end
