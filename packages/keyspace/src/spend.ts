/**
 * A key's spend per UTC day and per UTC month, kept where its budgets are checked: metering adds
 * each event's cost in the same atomic step that meters it, and auth's decision reads it in the
 * same script that applies the rate limits. One hash per key, in the key id's slot:
 *   `metering:spend:{<key_id>}` (spendKeyName)   `d:<day>` -> pico-USD spent that day, `m:<month>` -> that month
 * where <day> counts UTC days since 1970-01-01 and <month> is year * 12 + (month - 1), both
 * computed from the same clock arithmetic here (TypeScript) and in scripts/lib/spend.lua, so the two
 * services cannot disagree on where a day or a month ends. Fields of days and months before the
 * previous one are deleted as new ones start, so a hash holds at most four fields.
 */

/** Milliseconds in a UTC day. */
export const DAY_MS = 86_400_000;

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
