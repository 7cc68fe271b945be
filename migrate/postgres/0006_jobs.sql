-- The job queue (see docs/architecture.md, Jobs): goqite's table, as maragu.dev/goqite v0.4.0 ships it for
-- PostgreSQL (schema_postgres.sql), so that its receiver reads, extends and deletes the rows.
-- storage/jobs inserts them in the Unit of Work that causes a job, through the store's writer,
-- and keeps that SQL next to its goqite integration. goqite's PostgreSQL flavour binds time.Time
-- and []byte, hence timestamptz and bytea where SQLite has text and blob: the one difference
-- between the two schemas (migrate's parity test names it).
--
-- Two changes to goqite's file: the id's default takes its random part from gen_random_uuid()
-- (core since PostgreSQL 13) instead of pgcrypto's gen_random_bytes, so that no extension has to
-- be created (which needs rights an application's role may not have); and the trigger function
-- is goqite_update_timestamp, not update_timestamp, a name too general to take in a shared
-- schema. storage/jobs always sets the id itself.
--
-- Ours beyond goqite's: goqite_queue_timeout_idx serves the runner's read of the next due job;
-- idempotency_keys_created serves the job that expires the Idempotency-Key answers.

CREATE FUNCTION goqite_update_timestamp()
RETURNS trigger AS $$
BEGIN
   NEW.updated = now();
   RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TABLE goqite (
  id text PRIMARY KEY DEFAULT ('m_' || replace(gen_random_uuid()::text, '-', '')),
  created timestamptz NOT NULL DEFAULT now(),
  updated timestamptz NOT NULL DEFAULT now(),
  queue text NOT NULL,
  body bytea NOT NULL,
  timeout timestamptz NOT NULL DEFAULT now(),
  received integer NOT NULL DEFAULT 0,
  priority integer NOT NULL DEFAULT 0
);

CREATE TRIGGER goqite_updated_timestamp
BEFORE UPDATE ON goqite
FOR EACH ROW EXECUTE FUNCTION goqite_update_timestamp();

CREATE INDEX goqite_queue_priority_created_idx ON goqite (queue, priority DESC, created);
CREATE INDEX goqite_queue_timeout_idx ON goqite (queue, timeout);

CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
