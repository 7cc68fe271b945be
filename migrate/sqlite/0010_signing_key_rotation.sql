-- Rotation of the invocation signing key (docs/runs.md): a purpose now has one current key, the
-- signer, and any number of retired ones that still verify the tokens they signed until those
-- have expired. retired_at is NULL for the current key and the time it stopped signing for the
-- others; the partial unique index holds that a purpose never has two current keys, even when
-- two nodes rotate at once. The key that exists already becomes the current one.
--
-- SQLite cannot drop the UNIQUE of purpose in place: the table is rebuilt (copy, drop, rename). No
-- other table refers to it.

CREATE TABLE signing_keys_rotating (
    kid         TEXT PRIMARY KEY,
    purpose     TEXT NOT NULL,
    algorithm   TEXT NOT NULL,
    private_key TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    retired_at  TEXT
);

INSERT INTO signing_keys_rotating (kid, purpose, algorithm, private_key, created_at, retired_at)
    SELECT kid, purpose, algorithm, private_key, created_at, NULL FROM signing_keys;

DROP TABLE signing_keys;

ALTER TABLE signing_keys_rotating RENAME TO signing_keys;

CREATE UNIQUE INDEX signing_keys_current ON signing_keys (purpose) WHERE retired_at IS NULL;
