-- The request log: one row per request, partitioned by the UTC day the edge received it. Rows are
-- only ever inserted (ON CONFLICT DO NOTHING: an event delivered twice is one row) and leave with
-- their day's partition (DROP TABLE), never by DELETE. The partitions themselves are created and
-- dropped by the service (partitions.ts), not by migrations.
CREATE TABLE request_log (
  received_at timestamptz NOT NULL,
  -- The edge's id of the request (UsageEvent.event_id, a random UUID): with the day, the key.
  event_id text NOT NULL,
  request_id text NOT NULL DEFAULT '',
  response_id text NOT NULL DEFAULT '',
  trace_id text NOT NULL DEFAULT '',
  key_id text NOT NULL,
  team_id text NOT NULL DEFAULT '',
  api text NOT NULL,
  requested_model text NOT NULL DEFAULT '',
  model_id text NOT NULL DEFAULT '',
  provider text NOT NULL DEFAULT '',
  fallback_models text[] NOT NULL DEFAULT '{}',
  fallback_attempts smallint NOT NULL DEFAULT 0,
  outcome text NOT NULL,
  http_status smallint NOT NULL DEFAULT 0,
  error_code text NOT NULL DEFAULT '',
  prompt_tokens integer NOT NULL DEFAULT 0,
  completion_tokens integer NOT NULL DEFAULT 0,
  cached_tokens integer NOT NULL DEFAULT 0,
  cache_write_tokens integer NOT NULL DEFAULT 0,
  reasoning_tokens integer NOT NULL DEFAULT 0,
  cost_pico_usd bigint NOT NULL DEFAULT 0,
  latency_ms integer NOT NULL DEFAULT 0,
  time_to_first_token_ms integer,
  stream boolean NOT NULL DEFAULT false,
  user_agent text NOT NULL DEFAULT '',
  PRIMARY KEY (event_id, received_at)
) PARTITION BY RANGE (received_at);

-- Every search is bounded in time and pages by (time, event id): the default sort.
CREATE INDEX request_log_time ON request_log (received_at, event_id);
-- "What did this key (team) do": the filters operators start from.
CREATE INDEX request_log_key_time ON request_log (key_id, received_at);
CREATE INDEX request_log_team_time ON request_log (team_id, received_at) WHERE team_id <> '';
-- The detail view by the id a caller reports (x-request-id).
CREATE INDEX request_log_request_id ON request_log (request_id) WHERE request_id <> '';
-- "Why did these fail": failures are few, so the index is small.
CREATE INDEX request_log_failed_time ON request_log (received_at) WHERE outcome <> 'completed';
