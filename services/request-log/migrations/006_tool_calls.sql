-- The MCP tool calls made through the edge's /mcp (ToolCallEvent, from the tool-calls stream): one
-- row per call, partitioned by the UTC day the edge received it, kept as long as the requests
-- (REQUEST_LOG_RETENTION_DAYS) and keyed the same way (ON CONFLICT DO NOTHING: a call delivered
-- twice is one row). Rows leave with their day's partition (DROP TABLE), never by DELETE. A call's
-- arguments and result, when its key keeps bodies, are in request_bodies under its event id.
CREATE TABLE tool_calls (
  received_at timestamptz NOT NULL,
  -- The edge's id of the call (ToolCallEvent.event_id, a random UUID): with the day, the key.
  event_id text NOT NULL,
  request_id text NOT NULL DEFAULT '',
  key_id text NOT NULL,
  team_id text NOT NULL DEFAULT '',
  server text NOT NULL DEFAULT '',
  tool text NOT NULL DEFAULT '',
  -- ok, error, blocked, denied, limited, unavailable.
  outcome text NOT NULL,
  error_code text NOT NULL DEFAULT '',
  latency_ms integer NOT NULL DEFAULT 0,
  -- The guardrail decisions for the call's arguments and result (policy, check, point, action,
  -- enforced, entity, error, path, start, end; never the text found), as a JSON array.
  guardrails jsonb NOT NULL DEFAULT '[]',
  PRIMARY KEY (event_id, received_at)
) PARTITION BY RANGE (received_at);

-- Every search is bounded in time and pages by (time, event id).
CREATE INDEX tool_calls_time ON tool_calls (received_at, event_id);
-- A key's, a team's, a server's calls: the filters operators start from.
CREATE INDEX tool_calls_key_time ON tool_calls (key_id, received_at);
CREATE INDEX tool_calls_team_time ON tool_calls (team_id, received_at) WHERE team_id <> '';
CREATE INDEX tool_calls_server_time ON tool_calls (server, tool, received_at);
-- The detail by the id a caller reports (x-request-id).
CREATE INDEX tool_calls_request_id ON tool_calls (request_id) WHERE request_id <> '';
-- "Which calls failed or were blocked": few, so the index is small.
CREATE INDEX tool_calls_not_ok_time ON tool_calls (received_at) WHERE outcome <> 'ok';
