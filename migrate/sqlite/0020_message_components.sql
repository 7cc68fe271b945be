-- Interactive components on messages (buttons and selects an agent or app posts) and the
-- interactions people make with them. A message's components are one JSON document in
-- messages.components (NULL: none), always read and written whole with the message, so they
-- need no table of their own. An interaction is one click or pick, kept with who made it and
-- the values it sent; it names its message, thread and channel so that a message's
-- interactions, newest last, are one range of an index.

ALTER TABLE messages ADD COLUMN components TEXT;

CREATE TABLE interactions (
    id           TEXT PRIMARY KEY,
    message_id   TEXT NOT NULL REFERENCES messages (id),
    thread_id    TEXT NOT NULL REFERENCES threads (id),
    channel_id   TEXT NOT NULL REFERENCES channels (id),
    component_id TEXT NOT NULL,
    picked       TEXT NOT NULL,
    user_id      TEXT NOT NULL REFERENCES principals (id),
    created_at   TEXT NOT NULL
);

CREATE INDEX interactions_message ON interactions (message_id, id);
