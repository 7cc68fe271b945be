-- Direct messages: the same table and index as migrate/sqlite/0015_dms.sql (a test holds it),
-- which says what they hold and why.

CREATE TABLE dms (
    channel_id      TEXT COLLATE "C" PRIMARY KEY REFERENCES channels (id),
    participant_key TEXT COLLATE "C",
    created_at      TEXT COLLATE "C" NOT NULL
);

CREATE UNIQUE INDEX dms_participant_key ON dms (participant_key);
