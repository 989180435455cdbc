-- Request records become exactly once: a record's money facts (time, tool, key, credits charged
-- and refunded) are written by the ledger exporter from the call's debit and refund entries (the
-- ones the admission and refund scripts already write, exported exactly once), and its timing
-- (HTTP status, outcome, latency) by the serving process after the call. Either may arrive first,
-- each sets only its own columns (an upsert keyed by account and request id), so a replayed
-- batch changes nothing.
ALTER TABLE request_records
  ALTER COLUMN status DROP NOT NULL,
  ALTER COLUMN outcome DROP NOT NULL,
  ALTER COLUMN latency_ms DROP NOT NULL,
  ADD COLUMN charged bigint NOT NULL DEFAULT 0,
  ADD COLUMN refunded bigint NOT NULL DEFAULT 0;
-- Records written before this migration carried only the credits kept.
UPDATE request_records SET charged = credits;
ALTER TABLE request_records DROP COLUMN credits;
ALTER TABLE request_records ADD COLUMN credits bigint GENERATED ALWAYS AS (charged - refunded) STORED;
-- The analytics API reads one account's records over a time range, grouped by tool, key or
-- status: the (account_id, at) index serves the range; these cover the whole row it reads so
-- PostgreSQL answers from the index alone.
DROP INDEX request_records_account_at;
CREATE INDEX request_records_account_at ON request_records (account_id, at)
  INCLUDE (tool, key_id, status, latency_ms, charged, refunded);
