-- Files and resumable uploads: the same tables and indexes as migrate/sqlite/0024_files.sql (a
-- test holds it), which says what they hold and why.

CREATE TABLE files (
    id           TEXT COLLATE "C" PRIMARY KEY,
    uploader_id  TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    name         TEXT COLLATE "C" NOT NULL,
    content_type TEXT NOT NULL,
    size         BIGINT NOT NULL,
    sha256       TEXT COLLATE "C" NOT NULL,
    width        INTEGER,
    height       INTEGER,
    message_id   TEXT COLLATE "C" REFERENCES messages (id),
    thread_id    TEXT COLLATE "C" REFERENCES threads (id),
    channel_id   TEXT COLLATE "C" REFERENCES channels (id),
    space_id     TEXT COLLATE "C" REFERENCES spaces (id),
    channel_kind TEXT COLLATE "C",
    position     INTEGER,
    thumb_state  TEXT COLLATE "C" NOT NULL,
    thumb_sha256 TEXT COLLATE "C",
    thumb_type   TEXT COLLATE "C",
    thumb_width  INTEGER,
    thumb_height INTEGER,
    created_at   TEXT COLLATE "C" NOT NULL,
    attached_at  TEXT COLLATE "C"
);
CREATE INDEX files_message ON files (message_id, position);
CREATE INDEX files_sha256 ON files (sha256);
CREATE INDEX files_thumb_sha256 ON files (thumb_sha256);
CREATE INDEX files_unattached ON files (created_at) WHERE message_id IS NULL;

CREATE TABLE uploads (
    id           TEXT COLLATE "C" PRIMARY KEY,
    uploader_id  TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    name         TEXT COLLATE "C" NOT NULL,
    content_type TEXT NOT NULL,
    size         BIGINT NOT NULL,
    part_size    BIGINT NOT NULL,
    created_at   TEXT COLLATE "C" NOT NULL,
    expires_at   TEXT COLLATE "C" NOT NULL
);
CREATE TABLE upload_parts (
    upload_id TEXT COLLATE "C" NOT NULL REFERENCES uploads (id),
    n         INTEGER NOT NULL,
    size      BIGINT NOT NULL,
    PRIMARY KEY (upload_id, n)
);

ALTER TABLE messages ADD COLUMN attachments TEXT;
