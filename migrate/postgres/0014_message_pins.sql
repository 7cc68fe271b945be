-- Pinned messages: the same table and index as migrate/sqlite/0014_message_pins.sql (a test
-- holds it), which says what they hold and why.

CREATE TABLE message_pins (
    message_id TEXT COLLATE "C" PRIMARY KEY REFERENCES messages (id),
    channel_id TEXT COLLATE "C" NOT NULL REFERENCES channels (id),
    thread_id  TEXT COLLATE "C" NOT NULL REFERENCES threads (id),
    pinned_by  TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    pinned_at  TEXT COLLATE "C" NOT NULL
);

CREATE INDEX message_pins_channel ON message_pins (channel_id, pinned_at, message_id);
