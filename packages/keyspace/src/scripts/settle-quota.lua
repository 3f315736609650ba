-- Settles one charge of a key's window with the tokens actually used (auth's SettleUsage).
-- KEYS: the key's window R, T, H, P. args: charge (id), actual (tokens), now ('' = Redis TIME),
-- window_ms, pending_max_age_ms.
-- Returns name/value pairs, decoded by settle-quota.ts: outcome ('settled' | 'already_settled' |
-- 'unknown_reservation'), delta_tokens, tokens_in_window.
local outcome, delta, inWindow = settleCharge(KEYS[1], KEYS[2], KEYS[3], KEYS[4], args.charge, tonumber(args.actual), clock(args.now), tonumber(args.window_ms), tonumber(args.pending_max_age_ms))
return {'outcome', outcome, 'delta_tokens', delta, 'tokens_in_window', inWindow}
