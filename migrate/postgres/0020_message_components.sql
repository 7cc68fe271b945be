-- Interactive components on messages and their interactions: the same column, table and index
-- as migrate/sqlite/0020_message_components.sql (a test holds it), which says what they hold
-- and why.

ALTER TABLE messages ADD COLUMN components TEXT COLLATE "C";

CREATE TABLE interactions (
    id           TEXT COLLATE "C" PRIMARY KEY,
    message_id   TEXT COLLATE "C" NOT NULL REFERENCES messages (id),
    thread_id    TEXT COLLATE "C" NOT NULL REFERENCES threads (id),
    channel_id   TEXT COLLATE "C" NOT NULL REFERENCES channels (id),
    component_id TEXT COLLATE "C" NOT NULL,
    picked       TEXT COLLATE "C" NOT NULL,
    user_id      TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    created_at   TEXT COLLATE "C" NOT NULL
);

CREATE INDEX interactions_message ON interactions (message_id, id);
