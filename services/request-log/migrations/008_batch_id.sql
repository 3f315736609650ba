-- The batch a request was a line of (UsageEvent.batch_id, `batch_...`; '' for an online request
-- and for the rows logged before the column). A constant default: PostgreSQL adds the column
-- without rewriting a row. A partial index, since lines of batches are the rarer rows and a search
-- by batch lists one batch's lines.
ALTER TABLE request_log ADD COLUMN batch_id text NOT NULL DEFAULT '';
CREATE INDEX request_log_batch_id ON request_log (batch_id, received_at) WHERE batch_id <> '';
