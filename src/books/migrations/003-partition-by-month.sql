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
-- Here: new partitioned tables, the rows copied, the names swapped, in the migration's one
-- transaction; everything lands in the default partition until the process splits it by month.

CREATE TABLE ledger_entries_partitioned (
  LIKE ledger_entries INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
  PRIMARY KEY (account_id, entry_ms, entry_seq)
) PARTITION BY RANGE (entry_ms);
CREATE TABLE ledger_entries_default PARTITION OF ledger_entries_partitioned DEFAULT;
INSERT INTO ledger_entries_partitioned SELECT * FROM ledger_entries;
DROP TABLE ledger_entries;
ALTER TABLE ledger_entries_partitioned RENAME TO ledger_entries;
ALTER INDEX ledger_entries_partitioned_pkey RENAME TO ledger_entries_pkey;
CREATE INDEX ledger_entries_account_at ON ledger_entries (account_id, at);
CREATE INDEX ledger_entries_account_tool ON ledger_entries (account_id, tool, entry_ms, entry_seq) WHERE tool IS NOT NULL;
CREATE INDEX ledger_entries_account_key ON ledger_entries (account_id, key_id, entry_ms, entry_seq) WHERE key_id IS NOT NULL;

CREATE TABLE request_records_partitioned (
  LIKE request_records INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED,
  minted_at timestamptz NOT NULL,
  PRIMARY KEY (account_id, request_id, minted_at)
) PARTITION BY RANGE (minted_at);
CREATE TABLE request_records_default PARTITION OF request_records_partitioned DEFAULT;
-- minted_at of the existing rows, computed as src/lib/ids.ts does: `req_` + six base-36 digits of
-- the 30-second slot + 14 random characters.
INSERT INTO request_records_partitioned
    (account_id, request_id, minted_at, at, tool, key_id, status, outcome, latency_ms, charged, refunded)
  SELECT r.account_id, r.request_id,
         CASE WHEN r.request_id ~ '^req_[0-9a-z]{20}$'
           THEN to_timestamp((SELECT sum((strpos('0123456789abcdefghijklmnopqrstuvwxyz',
                                                 substr(r.request_id, 4 + d, 1)) - 1)::numeric
                                         * power(36::numeric, 6 - d))
                                FROM generate_series(1, 6) AS d) * 30)
           ELSE to_timestamp(0) END,
         r.at, r.tool, r.key_id, r.status, r.outcome, r.latency_ms, r.charged, r.refunded
    FROM request_records r;
DROP TABLE request_records;
ALTER TABLE request_records_partitioned RENAME TO request_records;
ALTER INDEX request_records_partitioned_pkey RENAME TO request_records_pkey;
CREATE INDEX request_records_account_at ON request_records (account_id, at)
  INCLUDE (tool, key_id, status, latency_ms, charged, refunded);
