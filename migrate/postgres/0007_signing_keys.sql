-- The instance's signing keys (see docs/runs.md): the Ed25519 key that signs the invocation tokens,
-- made by the first node that needs one and shared by every node through the database, so that
-- a token signed by one api node is checked by any other.
--
-- purpose is unique: two nodes that make their first key at once both insert-if-absent
-- (ON CONFLICT DO NOTHING) and then read the one row that won, so they never sign with
-- different keys. A later rotation keeps the old key under another purpose until its tokens
-- have expired. private_key is the 32-byte Ed25519 seed in standard base64; it never leaves
-- the server (the public key is derived from it).

CREATE TABLE signing_keys (
    kid         TEXT COLLATE "C" PRIMARY KEY,
    purpose     TEXT COLLATE "C" NOT NULL UNIQUE,
    algorithm   TEXT COLLATE "C" NOT NULL,
    private_key TEXT COLLATE "C" NOT NULL,
    created_at  TEXT COLLATE "C" NOT NULL
);
