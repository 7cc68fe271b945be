-- Notification levels and the notifier's place in the log.
--
-- A notification level is a person's choice for one channel or DM (all, mentions or none); a
-- channel without one is 'mentions' and a DM 'all', so only choices are rows. The index on
-- (channel_id, level) finds who chose 'all' for a channel without reading its members.
--
-- A log cursor is the seq up to which a server-side consumer of the log has done its work. The
-- notifier moves its cursor in the Unit of Work that appends the notifications of the events it
-- read, so a crash neither loses nor repeats one, and a second node that read the same events
-- fails to move the cursor and writes nothing.

CREATE TABLE notification_levels (
    principal_id TEXT NOT NULL REFERENCES principals (id),
    channel_id   TEXT NOT NULL REFERENCES channels (id),
    level        TEXT NOT NULL CHECK (level IN ('all', 'mentions', 'none')),
    updated_at   TEXT NOT NULL,
    PRIMARY KEY (principal_id, channel_id)
);
CREATE INDEX notification_levels_channel ON notification_levels (channel_id, level, principal_id);

CREATE TABLE log_cursors (
    name       TEXT PRIMARY KEY,
    seq        BIGINT NOT NULL,
    updated_at TEXT NOT NULL
);
