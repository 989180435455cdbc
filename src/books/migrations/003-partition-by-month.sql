-- The books' two growing tables become monthly range partitions (issue 20: "partitioned by time,
-- indexed per account"), so a month is dropped or archived as one table and a query over a time
-- range reads only its months. PostgreSQL requires the partition key in every unique key, so each
-- table is partitioned by a time that every writer of a row derives the same way, from the row's
-- own key:
--   ledger_entries  by entry_ms: the stream id's milliseconds, already in the primary key.
--   request_records by minted_at: the start of the 30-second slot the request id names
--                   (src/lib/ids.ts); an id naming no slot gets 1970-01-01, in the default
--                   partition. Both writers (the exporter, the serving process) know the id.
-- Month partitions are created ahead by the processes (src/books/partitions.ts); a row whose month
-- has none yet lands in the DEFAULT partition, and creating the month's partition moves it out.
-- ledger_entries keeps its primary key, so the existing table becomes the new one's DEFAULT
-- partition as it is: attached, not copied. With no other partition yet, attaching a default one
-- checks no row, and its primary key and indexes, equal to the new table's, are adopted as the
-- partitioned indexes' own, so nothing is built either: this step takes a moment however large
-- the table. The processes then split the default partition into months (src/books/partitions.ts),
-- one transaction per month. request_records needs a new key column (minted_at) computed for every
-- row, so its rows are copied, but not here: in batches after start-up (below).

CREATE TABLE ledger_entries_partitioned (
  LIKE ledger_entries INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
  PRIMARY KEY (account_id, entry_ms, entry_seq)
) PARTITION BY RANGE (entry_ms);
ALTER TABLE ledger_entries RENAME TO ledger_entries_default;
ALTER INDEX ledger_entries_pkey RENAME TO ledger_entries_default_pkey;
ALTER INDEX ledger_entries_account_at RENAME TO ledger_entries_default_account_at;
ALTER INDEX ledger_entries_account_tool RENAME TO ledger_entries_default_account_tool;
ALTER INDEX ledger_entries_account_key RENAME TO ledger_entries_default_account_key;
ALTER TABLE ledger_entries_partitioned ATTACH PARTITION ledger_entries_default DEFAULT;
ALTER TABLE ledger_entries_partitioned RENAME TO ledger_entries;
ALTER INDEX ledger_entries_partitioned_pkey RENAME TO ledger_entries_pkey;
CREATE INDEX ledger_entries_account_at ON ledger_entries (account_id, at);
CREATE INDEX ledger_entries_account_tool ON ledger_entries (account_id, tool, entry_ms, entry_seq) WHERE tool IS NOT NULL;
CREATE INDEX ledger_entries_account_key ON ledger_entries (account_id, key_id, entry_ms, entry_seq) WHERE key_id IS NOT NULL;

-- request_records: the existing table is set aside (renamed, a moment) and a new partitioned one
-- takes its name; the processes then move the old rows over in small batches, each its own
-- transaction (src/books/legacy-records.ts), computing minted_at with the function below, and drop
-- the old table once it is empty.
ALTER TABLE request_records RENAME TO request_records_unpartitioned;
ALTER INDEX request_records_pkey RENAME TO request_records_unpartitioned_pkey;
ALTER INDEX request_records_account_at RENAME TO request_records_unpartitioned_account_at;
CREATE TABLE request_records (
  LIKE request_records_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED,
  minted_at timestamptz NOT NULL,
  PRIMARY KEY (account_id, request_id, minted_at)
) PARTITION BY RANGE (minted_at);
CREATE TABLE request_records_default PARTITION OF request_records DEFAULT;
CREATE INDEX request_records_account_at ON request_records (account_id, at)
  INCLUDE (tool, key_id, status, latency_ms, charged, refunded);

-- A request id's minted_at, computed as src/lib/ids.ts does: `req_` + six base-36 digits of the
-- 30-second slot + 14 random characters; 1970-01-01 for an id naming no slot.
CREATE FUNCTION books_request_minted_at(request_id text) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT CASE WHEN request_id ~ '^req_[0-9a-z]{20}$'
    THEN to_timestamp(30::bigint * (
           (strpos('0123456789abcdefghijklmnopqrstuvwxyz', substr(request_id, 5, 1)) - 1)::bigint * 60466176
         + (strpos('0123456789abcdefghijklmnopqrstuvwxyz', substr(request_id, 6, 1)) - 1) * 1679616
         + (strpos('0123456789abcdefghijklmnopqrstuvwxyz', substr(request_id, 7, 1)) - 1) * 46656
         + (strpos('0123456789abcdefghijklmnopqrstuvwxyz', substr(request_id, 8, 1)) - 1) * 1296
         + (strpos('0123456789abcdefghijklmnopqrstuvwxyz', substr(request_id, 9, 1)) - 1) * 36
         + (strpos('0123456789abcdefghijklmnopqrstuvwxyz', substr(request_id, 10, 1)) - 1)))
    ELSE to_timestamp(0) END
$$;
