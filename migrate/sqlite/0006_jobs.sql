-- The job queue (see docs/architecture.md, Jobs): goqite's table, as maragu.dev/goqite v0.4.0 ships it for SQLite
-- (schema_sqlite.sql), so that its receiver reads, extends and deletes the rows. storage/jobs
-- inserts them in the Unit of Work that causes a job, through the store's writer, and keeps
-- that SQL next to its goqite integration. Times are goqite's fixed-width UTC text with
-- milliseconds (2006-01-02T15:04:05.000Z), which sorts as text; the PostgreSQL flavour of
-- goqite uses timestamptz and bytea, the one difference between the two schemas.
--
-- Ours beyond goqite's: goqite_queue_timeout_idx serves the runner's read of the next due job;
-- idempotency_keys_created serves the job that expires the Idempotency-Key answers.

CREATE TABLE goqite (
  id text PRIMARY KEY DEFAULT ('m_' || lower(hex(randomblob(16)))),
  created text NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ')),
  updated text NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ')),
  queue text NOT NULL,
  body blob NOT NULL,
  timeout text NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ')),
  received integer NOT NULL DEFAULT 0,
  priority integer NOT NULL DEFAULT 0
) STRICT;

CREATE TRIGGER goqite_updated_timestamp AFTER UPDATE ON goqite BEGIN
  UPDATE goqite SET updated = strftime('%Y-%m-%dT%H:%M:%fZ') WHERE id = old.id;
END;

CREATE INDEX goqite_queue_priority_created_idx ON goqite (queue, priority DESC, created);
CREATE INDEX goqite_queue_timeout_idx ON goqite (queue, timeout);

CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
