-- Notification levels and log cursors: the same tables and index as
-- migrate/sqlite/0017_notifications.sql (a test holds it), which says what they hold.

CREATE TABLE notification_levels (
    principal_id TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    channel_id   TEXT COLLATE "C" NOT NULL REFERENCES channels (id),
    level        TEXT COLLATE "C" NOT NULL CHECK (level IN ('all', 'mentions', 'none')),
    updated_at   TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (principal_id, channel_id)
);
CREATE INDEX notification_levels_channel ON notification_levels (channel_id, level, principal_id);

CREATE TABLE log_cursors (
    name       TEXT COLLATE "C" PRIMARY KEY,
    seq        BIGINT NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL
);
