-- A thread under a message of a channel's main thread (POST /api/v1/messages/{id}/thread): the
-- thread records the message it started from. The unique index holds that a message has at most
-- one thread, also when two requests race to start it: the second insert does nothing and
-- answers in the thread of the first (storage/chat.go). NULL for every other thread, which
-- never collides.
--
-- There is no foreign key to messages: messages point to threads already, and a pair of tables
-- that point to each other could be neither copied table by table (storage/copy.go) nor
-- inserted without one of them deferred. A message is never removed (deletion leaves a
-- tombstone), so the parent a thread names always exists.
--
-- The reply count and the time of the last reply of a parent are the thread's own
-- message_count and last_message_at, read with the parent: a reply writes no row of the parent.

ALTER TABLE threads ADD COLUMN parent_message_id TEXT;

CREATE UNIQUE INDEX threads_parent_message ON threads (parent_message_id);
