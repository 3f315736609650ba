-- Settles one charge of a key's window with the tokens actually used (auth's SettleUsage), and
-- releases the request's budget holds: it ended, and what it used is metered apart (a request
-- settled here produced no usage event). For a member of a team, its team's window and holds too,
-- where the charge is `<key_id>:<charge>`.
-- KEYS: the key's window R, T, H, P, its spend hash S and its budget holds Z; for a member of a
-- team, then the team's window R, T, H, P, spend hash and budget holds (one slot). args: charge
-- (id), key_id, actual (tokens), now ('' = Redis TIME), window_ms, pending_max_age_ms.
-- Returns name/value pairs, decoded by settle-quota.ts: outcome ('settled' | 'already_settled' |
-- 'unknown_reservation'; 'settled' too when only a budget hold was released, a key without a
-- window), delta_tokens, tokens_in_window: the key's window's.
local now, actual, window, pendingMaxAge = clock(args.now), tonumber(args.actual), tonumber(args.window_ms), tonumber(args.pending_max_age_ms)
local outcome, delta, inWindow = settleCharge(KEYS[1], KEYS[2], KEYS[3], KEYS[4], args.charge, actual, now, window, pendingMaxAge)
local released = release(KEYS[5], KEYS[6], args.charge)
if #KEYS >= 12 then
  settleCharge(KEYS[7], KEYS[8], KEYS[9], KEYS[10], args.key_id .. ':' .. args.charge, actual, now, window, pendingMaxAge)
  released = release(KEYS[11], KEYS[12], args.key_id .. ':' .. args.charge) or released
end
if released and outcome == 'unknown_reservation' then outcome = 'settled' end
return {'outcome', outcome, 'delta_tokens', delta, 'tokens_in_window', inWindow}
