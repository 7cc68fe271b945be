-- The foundation schema on PostgreSQL: the same tables, columns and constraints as
-- migrate/sqlite/0001_init.sql (a test holds it), in the types both engines share. Times are
-- fixed-width UTC text (YYYY-MM-DDTHH:MM:SS.ffffffZ), ids UUIDv7 text, booleans INTEGER 0/1.
-- Text that is compared or ordered (ids, times, keys, kinds, names) is COLLATE "C", so that
-- ORDER BY, keyset pages and range comparisons follow SQLite's byte order whatever the
-- database's default collation; free text (content, payloads, display names) keeps the default.

CREATE TABLE instance (
    id                 INTEGER PRIMARY KEY CHECK (id = 1),
    setup_code_hash    TEXT COLLATE "C",
    setup_completed_at TEXT COLLATE "C"
);
INSERT INTO instance (id) VALUES (1);

CREATE TABLE sequence_counters (
    name  TEXT COLLATE "C" PRIMARY KEY,
    value BIGINT NOT NULL
);
INSERT INTO sequence_counters (name, value) VALUES ('event_seq', 0);
INSERT INTO sequence_counters (name, value) VALUES ('permission_version', 0);

CREATE TABLE principals (
    id           TEXT COLLATE "C" PRIMARY KEY,
    kind         TEXT COLLATE "C" NOT NULL CHECK (kind IN ('person', 'agent', 'app')),
    handle       TEXT COLLATE "C" NOT NULL,
    handle_key   TEXT COLLATE "C" NOT NULL UNIQUE,
    display_name TEXT NOT NULL,
    status       TEXT COLLATE "C" NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
    is_owner     INTEGER NOT NULL DEFAULT 0,
    created_at   TEXT COLLATE "C" NOT NULL,
    updated_at   TEXT COLLATE "C" NOT NULL,
    disabled_at  TEXT COLLATE "C"
);

CREATE TABLE local_credentials (
    principal_id  TEXT COLLATE "C" PRIMARY KEY REFERENCES principals (id),
    password_hash TEXT COLLATE "C" NOT NULL,
    updated_at    TEXT COLLATE "C" NOT NULL
);

CREATE TABLE auth_sessions (
    id           TEXT COLLATE "C" PRIMARY KEY,
    principal_id TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    token_hash   TEXT COLLATE "C" NOT NULL UNIQUE,
    created_at   TEXT COLLATE "C" NOT NULL,
    expires_at   TEXT COLLATE "C" NOT NULL,
    revoked_at   TEXT COLLATE "C"
);
CREATE INDEX auth_sessions_principal ON auth_sessions (principal_id);

CREATE TABLE api_tokens (
    id           TEXT COLLATE "C" PRIMARY KEY,
    principal_id TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    name         TEXT NOT NULL,
    token_hash   TEXT COLLATE "C" NOT NULL UNIQUE,
    created_at   TEXT COLLATE "C" NOT NULL,
    last_used_at TEXT COLLATE "C",
    revoked_at   TEXT COLLATE "C"
);
CREATE INDEX api_tokens_principal ON api_tokens (principal_id);

CREATE TABLE spaces (
    id          TEXT COLLATE "C" PRIMARY KEY,
    name        TEXT COLLATE "C" NOT NULL,
    created_by  TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    created_at  TEXT COLLATE "C" NOT NULL,
    updated_at  TEXT COLLATE "C" NOT NULL,
    archived_at TEXT COLLATE "C"
);

CREATE TABLE channels (
    id             TEXT COLLATE "C" PRIMARY KEY,
    space_id       TEXT COLLATE "C" NOT NULL REFERENCES spaces (id),
    kind           TEXT COLLATE "C" NOT NULL DEFAULT 'channel' CHECK (kind IN ('channel', 'dm')),
    name           TEXT COLLATE "C" NOT NULL,
    topic          TEXT NOT NULL DEFAULT '',
    main_thread_id TEXT COLLATE "C" NOT NULL,
    created_by     TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    created_at     TEXT COLLATE "C" NOT NULL,
    updated_at     TEXT COLLATE "C" NOT NULL,
    archived_at    TEXT COLLATE "C"
);
CREATE INDEX channels_space ON channels (space_id, id);

CREATE TABLE threads (
    id              TEXT COLLATE "C" PRIMARY KEY,
    channel_id      TEXT COLLATE "C" NOT NULL REFERENCES channels (id),
    space_id        TEXT COLLATE "C" NOT NULL REFERENCES spaces (id),
    title           TEXT NOT NULL DEFAULT '',
    is_main         INTEGER NOT NULL DEFAULT 0,
    created_by      TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    created_at      TEXT COLLATE "C" NOT NULL,
    updated_at      TEXT COLLATE "C" NOT NULL,
    last_message_at TEXT COLLATE "C",
    message_count   BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX threads_channel ON threads (channel_id, id);

CREATE TABLE grants (
    id            TEXT COLLATE "C" PRIMARY KEY,
    resource_kind TEXT COLLATE "C" NOT NULL CHECK (resource_kind IN ('space', 'channel')),
    resource_id   TEXT COLLATE "C" NOT NULL,
    principal_id  TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    level         TEXT COLLATE "C" NOT NULL CHECK (level IN ('view', 'post', 'invoke', 'manage')),
    level_rank    INTEGER NOT NULL,
    created_by    TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    created_at    TEXT COLLATE "C" NOT NULL,
    UNIQUE (resource_id, principal_id)
);
CREATE INDEX grants_principal ON grants (principal_id, resource_id);

CREATE TABLE messages (
    id            TEXT COLLATE "C" PRIMARY KEY,
    thread_id     TEXT COLLATE "C" NOT NULL REFERENCES threads (id),
    channel_id    TEXT COLLATE "C" NOT NULL REFERENCES channels (id),
    space_id      TEXT COLLATE "C" NOT NULL REFERENCES spaces (id),
    author_id     TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    content       TEXT NOT NULL,
    client_msg_id TEXT COLLATE "C",
    version       INTEGER NOT NULL DEFAULT 1,
    created_at    TEXT COLLATE "C" NOT NULL,
    edited_at     TEXT COLLATE "C",
    deleted_at    TEXT COLLATE "C",
    UNIQUE (author_id, client_msg_id)
);
CREATE INDEX messages_thread ON messages (thread_id, id);

CREATE TABLE message_revisions (
    message_id TEXT COLLATE "C" NOT NULL REFERENCES messages (id),
    version    INTEGER NOT NULL,
    content    TEXT NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (message_id, version)
);

CREATE TABLE mentions (
    message_id   TEXT COLLATE "C" NOT NULL REFERENCES messages (id),
    principal_id TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    PRIMARY KEY (message_id, principal_id)
);
CREATE INDEX mentions_principal ON mentions (principal_id, message_id);

CREATE TABLE reactions (
    message_id   TEXT COLLATE "C" NOT NULL REFERENCES messages (id),
    principal_id TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    emoji        TEXT COLLATE "C" NOT NULL,
    created_at   TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (message_id, emoji, principal_id)
);

CREATE TABLE event_log (
    seq          BIGINT PRIMARY KEY,
    type         TEXT COLLATE "C" NOT NULL,
    space_id     TEXT COLLATE "C",
    channel_id   TEXT COLLATE "C",
    thread_id    TEXT COLLATE "C",
    principal_id TEXT COLLATE "C",
    subject_id   TEXT COLLATE "C",
    actor_id     TEXT COLLATE "C",
    payload      TEXT NOT NULL,
    created_at   TEXT COLLATE "C" NOT NULL
);
CREATE INDEX event_log_subject ON event_log (subject_id);

CREATE TABLE idempotency_keys (
    principal_id  TEXT COLLATE "C" NOT NULL,
    idem_key      TEXT COLLATE "C" NOT NULL,
    fingerprint   TEXT COLLATE "C" NOT NULL,
    status_code   INTEGER NOT NULL,
    response_body TEXT NOT NULL,
    created_at    TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (principal_id, idem_key)
);
