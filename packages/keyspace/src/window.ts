/**
 * The sliding-window quota of one API key, kept in Redis and applied by scripts/lib/window.lua:
 * auth's decision (CheckKey) and settlement (SettleUsage), and metering, which settles a request's
 * reservation in the same atomic step that meters its usage event. One source, so the window's
 * rules cannot drift between the services that apply them.
 *
 * The window is a sliding log: at any instant, the requests allowed in the preceding window
 * number at most the key's requests per window, and the tokens charged to them sum to at most its
 * tokens per window. A request is charged at the instant it is allowed (Redis's clock, shared by
 * every replica); settlement changes its charge, never its instant. auth records the window's
 * length with the charges (`window_ms` in the charges hash), so that metering's settlement expires
 * them by the same rule whatever length auth runs with.
 */

/** The window's length unless configured otherwise (AUTH_QUOTA_WINDOW_SECONDS): one minute. */
export const WINDOW_MS = 60_000;

/**
 * How long an unsettled reservation that has left the window is remembered, so that a settlement
 * arriving after a long stream still finds it (and charges any excess once). Longer than the
 * edge's longest completion (10 minutes by default).
 */
export const PENDING_MAX_AGE_MS = 15 * 60_000;

/** A reservation id as CheckKey returns it: `<key id>:<part>`, the part chosen by the caller. */
export const RESERVATION_PATTERN = /^(key_[A-Za-z0-9]{16}):([A-Za-z0-9_-]{1,64})$/;

/** A reservation id taken apart: the key whose window holds it, and its charge id there. */
export interface ReservationId {
  keyId: string;
  chargeId: string;
}

/** Takes a reservation id apart; undefined when it is malformed. */
export function parseReservationId(reservationId: string): ReservationId | undefined {
  const match = RESERVATION_PATTERN.exec(reservationId);
  return match ? { keyId: match[1]!, chargeId: match[2]! } : undefined;
}
