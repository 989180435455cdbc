-- Account events join the books, and payments are partitioned by month like the other tables.

-- One row per account event (src/events/types.ts), written by the exporter from the store's event
-- log (events the webhook relay handed on) with ON CONFLICT DO NOTHING: an event exported twice (a
-- crash between insert and the store forgetting it, or a relay that logged it twice) is kept once.
-- Partitioned by month of the event's own timestamp, which is part of the event record and never
-- changes, so every export of an event computes the same key. The key's order (account, time, id)
-- is also the events API's keyset order (newest first).
CREATE TABLE events (
  account_id text NOT NULL,
  at timestamptz NOT NULL,
  id text NOT NULL,
  type text NOT NULL,
  data jsonb NOT NULL,
  exported_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, at, id)
) PARTITION BY RANGE (at);
CREATE TABLE events_default PARTITION OF events DEFAULT;
CREATE INDEX events_account_type_at ON events (account_id, type, at, id);

-- Payments become monthly partitions of their settlement time. A payment is written once per
-- payment id, whoever writes it, but settled_at is the writer's clock, not derivable from the id,
-- and PostgreSQL requires the partition key in every unique key: so the id's uniqueness lives in a
-- small unpartitioned table beside it (payment_ids), which writers insert into first, in the same
-- transaction, and only the ids that were new there get a payments row.
CREATE TABLE payment_ids (
  id text PRIMARY KEY,
  settled_at timestamptz NOT NULL
);
INSERT INTO payment_ids (id, settled_at) SELECT id, settled_at FROM payments;

CREATE TABLE payments_partitioned (
  LIKE payments INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
  PRIMARY KEY (id, settled_at)
) PARTITION BY RANGE (settled_at);
CREATE TABLE payments_default PARTITION OF payments_partitioned DEFAULT;
-- Payments are one row per purchase (few next to ledger entries): copied here, split into their
-- months by the processes at start-up (src/books/partitions.ts).
INSERT INTO payments_partitioned SELECT * FROM payments;
DROP TABLE payments;
ALTER TABLE payments_partitioned RENAME TO payments;
ALTER INDEX payments_partitioned_pkey RENAME TO payments_pkey;
CREATE INDEX payments_account_settled ON payments (account_id, settled_at);
