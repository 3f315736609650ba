-- The deployment that answered each request (UsageEvent.deployment_id: `<index>:<origin>`, or
-- `0:in-process` for a simulated model), beside its provider. A constant default: PostgreSQL adds
-- the column without rewriting a row, and the rows logged before it read ''.
ALTER TABLE request_log ADD COLUMN deployment_id text NOT NULL DEFAULT '';
