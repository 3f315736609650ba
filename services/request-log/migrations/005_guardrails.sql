-- The guardrail decisions of each request (UsageEvent.guardrails: policy, check, point, action,
-- enforced, entity, error; never the text found), as a JSON array. A constant default: PostgreSQL
-- adds the column without rewriting a row, and the rows logged before it read [].
ALTER TABLE request_log ADD COLUMN guardrails jsonb NOT NULL DEFAULT '[]';
