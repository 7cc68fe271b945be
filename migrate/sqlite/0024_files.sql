-- Files: an upload's metadata (its bytes are a blob named by their SHA-256, outside the
-- database). A file is its uploader's alone until a message carries it: attaching writes the
-- message, thread, channel and space it now belongs to (and the channel's kind, so that a read is
-- authorized without a join), and from then on it is exactly as visible as that message.
-- thumb_state follows the thumbnail job: 'none' (no image), 'pending', 'ready' (thumb_* filled),
-- 'refused' (too many pixels, or bytes that do not decode). Several files may share a blob
-- (sha256): a blob is removed only when no row names it any more. files_unattached serves the
-- sweep of files never attached.
CREATE TABLE files (
    id           TEXT PRIMARY KEY,
    uploader_id  TEXT NOT NULL REFERENCES principals (id),
    name         TEXT NOT NULL,
    content_type TEXT NOT NULL,
    size         BIGINT NOT NULL,
    sha256       TEXT NOT NULL,
    width        INTEGER,
    height       INTEGER,
    message_id   TEXT REFERENCES messages (id),
    thread_id    TEXT REFERENCES threads (id),
    channel_id   TEXT REFERENCES channels (id),
    space_id     TEXT REFERENCES spaces (id),
    channel_kind TEXT,
    position     INTEGER,
    thumb_state  TEXT NOT NULL,
    thumb_sha256 TEXT,
    thumb_type   TEXT,
    thumb_width  INTEGER,
    thumb_height INTEGER,
    created_at   TEXT NOT NULL,
    attached_at  TEXT
);
CREATE INDEX files_message ON files (message_id, position);
CREATE INDEX files_sha256 ON files (sha256);
CREATE INDEX files_thumb_sha256 ON files (thumb_sha256);
CREATE INDEX files_unattached ON files (created_at) WHERE message_id IS NULL;

-- Resumable uploads: the file announced (name, size, type) and cut into parts of part_size
-- bytes (the last one shorter); upload_parts records each part received, whose bytes wait in the
-- blob store until the upload completes or expires at expires_at.
CREATE TABLE uploads (
    id           TEXT PRIMARY KEY,
    uploader_id  TEXT NOT NULL REFERENCES principals (id),
    name         TEXT NOT NULL,
    content_type TEXT NOT NULL,
    size         BIGINT NOT NULL,
    part_size    BIGINT NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL
);
CREATE TABLE upload_parts (
    upload_id TEXT NOT NULL REFERENCES uploads (id),
    n         INTEGER NOT NULL,
    size      BIGINT NOT NULL,
    PRIMARY KEY (upload_id, n)
);

-- A message's attachments as it shows them (id, name, type, size, dimensions), in the order
-- given, so that reading a page of messages needs no join; NULL for none.
ALTER TABLE messages ADD COLUMN attachments TEXT;
