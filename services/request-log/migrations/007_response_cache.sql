-- What the response cache did for each request (UsageEvent.cache.status: `hit`, `miss`, `skip`;
-- NULL when the cache was off for it, and for the rows logged before the column), and what a hit
-- saved (CacheUse.saved_cost_pico_usd: what the cached answer cost when it was made; 0 for
-- anything but a hit). No default to write and a constant one: PostgreSQL adds both columns
-- without rewriting a row. No index: a search is bounded in time, and hits are no rare subset
-- that a partial index would keep small (as it does failures).
ALTER TABLE request_log ADD COLUMN cache_status text, ADD COLUMN saved_cost_pico_usd bigint NOT NULL DEFAULT 0;
