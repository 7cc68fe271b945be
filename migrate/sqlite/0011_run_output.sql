-- The output of a run in parts (storage/runs.go): a patch that appends to the output writes one
-- row of run_output, keyed by the version of the patch, instead of rewriting the whole document,
-- so that a run streaming its answer costs each patch its own size. runs.output_bytes is the
-- output's length in bytes, which bounds a patch (runs.MaxOutputBytes) without reading the
-- output. runs.document keeps the status line and the steps.
--
-- The output of the existing runs moves into part 0 and out of their document.

ALTER TABLE runs ADD COLUMN output_bytes INTEGER NOT NULL DEFAULT 0;

CREATE TABLE run_output (
    run_id TEXT NOT NULL REFERENCES runs (id),
    part   INTEGER NOT NULL,
    text   TEXT NOT NULL,
    PRIMARY KEY (run_id, part)
);

INSERT INTO run_output (run_id, part, text)
    SELECT id, 0, json_extract(document, '$.output') FROM runs
    WHERE coalesce(json_extract(document, '$.output'), '') <> '';

UPDATE runs SET output_bytes = length(CAST(coalesce(json_extract(document, '$.output'), '') AS BLOB)),
    document = json_remove(document, '$.output');
