-- Pinned messages: at most one pin per message (the primary key), so a repeated pin finds the
-- row and writes nothing. A pin names the message's channel and thread so that a channel's pins
-- are one range of an index, newest first, without reading the messages. A deleted message is
-- unpinned in the Unit of Work that deletes it, so no pin points to a tombstone.

CREATE TABLE message_pins (
    message_id TEXT PRIMARY KEY REFERENCES messages (id),
    channel_id TEXT NOT NULL REFERENCES channels (id),
    thread_id  TEXT NOT NULL REFERENCES threads (id),
    pinned_by  TEXT NOT NULL REFERENCES principals (id),
    pinned_at  TEXT NOT NULL
);

CREATE INDEX message_pins_channel ON message_pins (channel_id, pinned_at, message_id);
