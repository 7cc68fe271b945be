-- Rotation of the invocation signing key (docs/runs.md): a purpose now has one current key, the
-- signer, and any number of retired ones that still verify the tokens they signed until those
-- have expired. retired_at is NULL for the current key and the time it stopped signing for the
-- others; the partial unique index holds that a purpose never has two current keys, even when
-- two nodes rotate at once. The key that exists already becomes the current one.

ALTER TABLE signing_keys DROP CONSTRAINT signing_keys_purpose_key;

ALTER TABLE signing_keys ADD COLUMN retired_at TEXT COLLATE "C";

CREATE UNIQUE INDEX signing_keys_current ON signing_keys (purpose) WHERE retired_at IS NULL;
