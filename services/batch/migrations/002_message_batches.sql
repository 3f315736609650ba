-- Anthropic's Message Batches on the same tables: the API a batch was made with (`openai`, or
-- `anthropic` for POST /v1/messages/batches, whose results file is in Anthropic's form), and the
-- counts of Anthropic's `request_counts`, set when the batch ends (while it runs they are read from
-- its lines).
ALTER TABLE batch.batches ADD COLUMN api text NOT NULL DEFAULT 'openai';
ALTER TABLE batch.batches ADD COLUMN succeeded_count integer NOT NULL DEFAULT 0;
ALTER TABLE batch.batches ADD COLUMN errored_count integer NOT NULL DEFAULT 0;
ALTER TABLE batch.batches ADD COLUMN canceled_count integer NOT NULL DEFAULT 0;
ALTER TABLE batch.batches ADD COLUMN expired_count integer NOT NULL DEFAULT 0;
CREATE INDEX batches_by_key_api ON batch.batches (key_id, api, seq DESC);
