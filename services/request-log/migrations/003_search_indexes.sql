-- Searches that read an index instead of every row of their time range. Measured on ten million
-- rows over 30 days (bench/reqlog-search.bench.ts, docs/performance.md), without them: the
-- slowest or dearest first took 6 s (a sort of every row), their next page 17 s, and a latency or
-- cost bound, or a model, that matched almost nothing 5 to 18 s (a scan of every row, looking for
-- a page); with them, 10 to 60 ms.
--
-- Orders by latency and by cost, and their bounds: the time and the event id end each key as they
-- end each order, so a cursor's next page starts where the last one stopped.
CREATE INDEX request_log_latency_time ON request_log (latency_ms, received_at, event_id);
CREATE INDEX request_log_cost_time ON request_log (cost_pico_usd, received_at, event_id);
-- A model's requests: the model that answered, or the one asked for (the filter takes either).
CREATE INDEX request_log_model_time ON request_log (model_id, received_at);
CREATE INDEX request_log_requested_model_time ON request_log (requested_model, received_at);
-- A finer histogram of latency and cost (partitions.ts SEARCHED_COLUMNS_STATISTICS, which the
-- partitions created from now on get too): with the default, PostgreSQL reckoned a bound that
-- matches almost nothing to match about a thousand rows a day and chose to walk the time index.
ALTER TABLE request_log ALTER COLUMN latency_ms SET STATISTICS 1000, ALTER COLUMN cost_pico_usd SET STATISTICS 1000;
--
-- Built at start like any migration, holding the table's writes while the indexes build (an index
-- of a partitioned table cannot be built CONCURRENTLY): the usage events wait in the stream
-- meanwhile and are written afterwards, as when PostgreSQL is down.
