-- The bodies of the requests whose key or team has `log_bodies` on: the prompt and the answer,
-- capped and redacted by the edge. A table of its own, partitioned by the same UTC day as
-- request_log and keyed the same way, so that its partitions are dropped at a retention of their
-- own (REQUEST_LOG_BODY_RETENTION_DAYS, shorter than the requests'), by DROP TABLE. Rows are only
-- ever inserted (ON CONFLICT DO NOTHING: bodies delivered twice are one row).
CREATE TABLE request_bodies (
  received_at timestamptz NOT NULL,
  -- The request's event id (request_log.event_id).
  event_id text NOT NULL,
  key_id text NOT NULL DEFAULT '',
  request_body text NOT NULL DEFAULT '',
  response_body text NOT NULL DEFAULT '',
  -- Bytes the edge's cap cut from the end of each body; 0: whole.
  request_truncated_bytes bigint NOT NULL DEFAULT 0,
  response_truncated_bytes bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (event_id, received_at)
) PARTITION BY RANGE (received_at);
