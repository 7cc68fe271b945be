-- The output of a run in parts: the same table and columns as migrate/sqlite/0011_run_output.sql
-- (a test holds it), which says what they hold. The output of the existing runs moves into
-- part 0 and out of their document.

ALTER TABLE runs ADD COLUMN output_bytes INTEGER NOT NULL DEFAULT 0;

CREATE TABLE run_output (
    run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (id),
    part   INTEGER NOT NULL,
    text   TEXT NOT NULL,
    PRIMARY KEY (run_id, part)
);

INSERT INTO run_output (run_id, part, text)
    SELECT id, 0, document::jsonb ->> 'output' FROM runs
    WHERE coalesce(document::jsonb ->> 'output', '') <> '';

UPDATE runs SET output_bytes = octet_length(coalesce(document::jsonb ->> 'output', '')),
    document = (document::jsonb - 'output')::text;
