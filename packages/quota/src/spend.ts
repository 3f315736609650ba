/**
 * A key's spend per UTC day and per UTC month, kept where its budgets are checked: metering adds
 * each event's cost in the same atomic step that meters it, and auth's decision reads it in the
 * same script that applies the rate limits. One hash per key, in the key id's slot:
 *   `metering:spend:{<key_id>}`   `d:<day>` -> pico-USD spent that day, `m:<month>` -> that month
 * where <day> counts UTC days since 1970-01-01 and <month> is year * 12 + (month - 1), both
 * computed from the same clock arithmetic here (TypeScript) and in SPEND_LUA (Lua), so the two
 * services cannot disagree on where a day or a month ends. Fields of days and months before the
 * previous one are deleted as new ones start, so a hash holds at most four fields.
 */

/** Milliseconds in a UTC day. */
export const DAY_MS = 86_400_000;

/** The spend hash of a key. */
export function spendKeyName(keyId: string): string {
  return `metering:spend:{${keyId}}`;
}

/** The UTC day of a Unix time in ms, as days since 1970-01-01. */
export function utcDay(ms: number): number {
  return Math.floor(ms / DAY_MS);
}

/** The UTC month of a Unix time in ms, as year * 12 + (month - 1). */
export function utcMonth(ms: number): number {
  const date = new Date(ms);
  return date.getUTCFullYear() * 12 + date.getUTCMonth();
}

/** Unix ms when a UTC month (year * 12 + month - 1) starts. */
export function utcMonthStartMs(month: number): number {
  return Date.UTC(Math.floor(month / 12), month % 12, 1);
}

/** The spend hash's field of a day. */
export function spendDayField(ms: number): string {
  return `d:${utcDay(ms)}`;
}

/** The spend hash's field of a month. */
export function spendMonthField(ms: number): string {
  return `m:${utcMonth(ms)}`;
}

/** How long a spend hash outlives its last write: past the month after it, nothing reads it. */
export const SPEND_TTL_MS = 63 * DAY_MS;

/**
 * Lua of the spend hash: utcDay(ms) and utcMonth(ms) as above (the month through the civil-from-
 * days algorithm, H. Hinnant's, exact for every Gregorian date), and spent(S, now) -> day's spend,
 * month's spend, both in pico-USD as Lua numbers (doubles: exact to the pico-dollar below 9,007
 * USD, and within a few pico-dollars above).
 */
export const SPEND_LUA = `
local function utcDay(ms) return math.floor(ms / ${DAY_MS}) end
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
local function spent(S, now)
  local values = redis.call('HMGET', S, 'd:' .. utcDay(now), 'm:' .. utcMonth(now))
  return tonumber(values[1]) or 0, tonumber(values[2]) or 0
end
`;
