-- Read positions, thread subscriptions and mentions by thread: the same columns, tables and
-- indexes as migrate/sqlite/0016_read_state.sql (a test holds it), which says what they hold.

ALTER TABLE threads ADD COLUMN post_count BIGINT NOT NULL DEFAULT 0;
UPDATE threads SET post_count = (SELECT COUNT(*) FROM messages WHERE messages.thread_id = threads.id);

ALTER TABLE mentions ADD COLUMN thread_id TEXT COLLATE "C";
UPDATE mentions SET thread_id = (SELECT thread_id FROM messages WHERE messages.id = mentions.message_id);
CREATE INDEX mentions_thread ON mentions (principal_id, thread_id, message_id);

CREATE TABLE read_states (
    principal_id         TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    thread_id            TEXT COLLATE "C" NOT NULL REFERENCES threads (id),
    channel_id           TEXT COLLATE "C" NOT NULL REFERENCES channels (id),
    last_read_message_id TEXT COLLATE "C" NOT NULL,
    read_count           BIGINT NOT NULL,
    updated_at           TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (principal_id, thread_id)
);

CREATE TABLE thread_subscriptions (
    principal_id TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    thread_id    TEXT COLLATE "C" NOT NULL REFERENCES threads (id),
    level        TEXT COLLATE "C" NOT NULL CHECK (level IN ('all', 'mentions', 'none')),
    updated_at   TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (principal_id, thread_id)
);
CREATE INDEX thread_subscriptions_thread ON thread_subscriptions (thread_id, principal_id);

ALTER TABLE instance ADD COLUMN broadcast_mentions TEXT COLLATE "C" NOT NULL DEFAULT 'post';
