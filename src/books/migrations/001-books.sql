-- The books: every credit change (the ledger), every keyed or paid tool call (request records)
-- and every settled x402 payment, per account and time. Rows are only ever inserted.

-- One row per ledger stream entry, keyed by its account and stream id (<ms>-<seq>): the exporter
-- inserts with ON CONFLICT DO NOTHING, so an entry exported twice (a crash between insert and
-- trim) is kept once. The primary key is also the usage API's keyset order (newest first).
CREATE TABLE ledger_entries (
  account_id text NOT NULL,
  entry_ms bigint NOT NULL,
  entry_seq bigint NOT NULL,
  at timestamptz NOT NULL,
  kind text NOT NULL CHECK (kind IN ('grant', 'purchase', 'allowance', 'debit', 'refund')),
  amount bigint NOT NULL,
  balance bigint NOT NULL,
  reason text NOT NULL,
  request_id text NOT NULL,
  tool text,
  key_id text,
  exported_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, entry_ms, entry_seq)
);
CREATE INDEX ledger_entries_account_at ON ledger_entries (account_id, at);
CREATE INDEX ledger_entries_account_tool ON ledger_entries (account_id, tool, entry_ms, entry_seq) WHERE tool IS NOT NULL;
CREATE INDEX ledger_entries_account_key ON ledger_entries (account_id, key_id, entry_ms, entry_seq) WHERE key_id IS NOT NULL;

-- One row per finished tool call: what analytics asks (per tool, per key, per hour, percentiles).
CREATE TABLE request_records (
  account_id text NOT NULL,
  request_id text NOT NULL,
  at timestamptz NOT NULL,
  tool text NOT NULL,
  key_id text,
  status integer NOT NULL,
  outcome text NOT NULL,
  latency_ms integer NOT NULL,
  credits bigint NOT NULL,
  PRIMARY KEY (account_id, request_id)
);
CREATE INDEX request_records_account_at ON request_records (account_id, at);

-- One row per settled x402 payment credited to an account.
CREATE TABLE payments (
  id text PRIMARY KEY,
  account_id text NOT NULL,
  network text NOT NULL,
  payer text NOT NULL,
  value_atomic numeric(78, 0) NOT NULL,
  credits bigint NOT NULL,
  type text NOT NULL,
  plan text,
  tx_hash text,
  settled_at timestamptz NOT NULL
);
CREATE INDEX payments_account_settled ON payments (account_id, settled_at);
