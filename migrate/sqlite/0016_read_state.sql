-- What is new for a person: read positions, the thread a person follows or mutes, and mentions
-- that a thread's unread range can count.
--
-- A thread's post_count counts every message ever posted in it (a deleted message keeps its
-- tombstone, and its place in the count); message_count, which deletions lower, cannot serve,
-- because a read position is a count of messages up to it. The thread bump of a batch raises
-- both (storage/chat.go).
--
-- A read position holds the last message read and read_count, the thread's post_count up to
-- and including that message: the unread of a thread is post_count - read_count, from two rows
-- and no count over messages at read time, and a message posted writes no row per member.
-- A thread with no read position for a person is unread in full.
--
-- A thread subscription is a person's choice for one thread (all, mentions or none); the
-- author of a thread's parent and everyone who replies in it follow it (level all).
--
-- A mention names its message's thread, so that the unread mentions of a thread are one range
-- of an index after the read position. @here and @channel write a mention per member who may
-- see the channel; instance.broadcast_mentions says who may use them ('post': anyone who may
-- post; 'manage': only the channel's managers).

ALTER TABLE threads ADD COLUMN post_count BIGINT NOT NULL DEFAULT 0;
UPDATE threads SET post_count = (SELECT COUNT(*) FROM messages WHERE messages.thread_id = threads.id);

ALTER TABLE mentions ADD COLUMN thread_id TEXT;
UPDATE mentions SET thread_id = (SELECT thread_id FROM messages WHERE messages.id = mentions.message_id);
CREATE INDEX mentions_thread ON mentions (principal_id, thread_id, message_id);

CREATE TABLE read_states (
    principal_id         TEXT NOT NULL REFERENCES principals (id),
    thread_id            TEXT NOT NULL REFERENCES threads (id),
    channel_id           TEXT NOT NULL REFERENCES channels (id),
    last_read_message_id TEXT NOT NULL,
    read_count           BIGINT NOT NULL,
    updated_at           TEXT NOT NULL,
    PRIMARY KEY (principal_id, thread_id)
);

CREATE TABLE thread_subscriptions (
    principal_id TEXT NOT NULL REFERENCES principals (id),
    thread_id    TEXT NOT NULL REFERENCES threads (id),
    level        TEXT NOT NULL CHECK (level IN ('all', 'mentions', 'none')),
    updated_at   TEXT NOT NULL,
    PRIMARY KEY (principal_id, thread_id)
);
CREATE INDEX thread_subscriptions_thread ON thread_subscriptions (thread_id, principal_id);

ALTER TABLE instance ADD COLUMN broadcast_mentions TEXT NOT NULL DEFAULT 'post';
