-- The batch service's tables, in the schema `batch`: the files of each key (their bytes inline),
-- the batches, and each batch's lines with where they are and their answers.
CREATE TABLE batch.files (
  -- The order of the listings (newest first), and their `after` cursor.
  seq bigserial UNIQUE,
  id text PRIMARY KEY,
  key_id text NOT NULL,
  team_id text NOT NULL DEFAULT '',
  filename text NOT NULL,
  -- `batch` for an upload, `batch_output` for a batch's output or error file.
  purpose text NOT NULL,
  bytes bigint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz,
  content bytea NOT NULL
);
CREATE INDEX files_by_key ON batch.files (key_id, seq DESC);

CREATE TABLE batch.batches (
  seq bigserial UNIQUE,
  id text PRIMARY KEY,
  key_id text NOT NULL,
  team_id text NOT NULL DEFAULT '',
  endpoint text NOT NULL,
  input_file_id text NOT NULL,
  completion_window text NOT NULL,
  -- validating, failed, in_progress, finalizing, completed, expired, cancelling, cancelled.
  status text NOT NULL,
  errors_json text NOT NULL DEFAULT '',
  output_file_id text NOT NULL DEFAULT '',
  error_file_id text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT now(),
  in_progress_at timestamptz,
  expires_at timestamptz NOT NULL,
  finalizing_at timestamptz,
  completed_at timestamptz,
  failed_at timestamptz,
  expired_at timestamptz,
  cancelling_at timestamptz,
  cancelled_at timestamptz,
  -- Set when the batch ends; while it runs the counts are read from its lines.
  total_count integer NOT NULL DEFAULT 0,
  completed_count integer NOT NULL DEFAULT 0,
  failed_count integer NOT NULL DEFAULT 0,
  metadata_json text NOT NULL DEFAULT '',
  -- The owner's API key sealed with BATCH_SECRETS_KEY; NULL once the batch ended.
  sealed_api_key text
);
CREATE INDEX batches_by_key ON batch.batches (key_id, seq DESC);
CREATE INDEX batches_active ON batch.batches (status) WHERE status IN ('validating', 'in_progress', 'finalizing', 'cancelling');

CREATE TABLE batch.batch_lines (
  batch_id text NOT NULL REFERENCES batch.batches (id) ON DELETE CASCADE,
  -- The line's place among the file's requests, from 0: the output file's order.
  line_index integer NOT NULL,
  custom_id text NOT NULL,
  method text NOT NULL,
  url text NOT NULL,
  body jsonb NOT NULL,
  -- queued, running, done (answered), failed (no answer).
  status text NOT NULL DEFAULT 'queued',
  attempts integer NOT NULL DEFAULT 0,
  -- A line sent again waits until then.
  not_before timestamptz,
  claimed_by text,
  lease_until timestamptz,
  status_code integer,
  request_id text,
  response_body jsonb,
  error_code text,
  error_message text,
  PRIMARY KEY (batch_id, line_index)
);
CREATE INDEX batch_lines_open ON batch.batch_lines (batch_id, line_index) WHERE status IN ('queued', 'running');
