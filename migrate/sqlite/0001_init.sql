-- The foundation schema. Types and statements are the subset both engines accept; times are
-- fixed-width UTC text (YYYY-MM-DDTHH:MM:SS.ffffffZ), ids UUIDv7 text.

CREATE TABLE instance (
    id                 INTEGER PRIMARY KEY CHECK (id = 1),
    setup_code_hash    TEXT,
    setup_completed_at TEXT
);
INSERT INTO instance (id) VALUES (1);

CREATE TABLE sequence_counters (
    name  TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);
INSERT INTO sequence_counters (name, value) VALUES ('event_seq', 0);
INSERT INTO sequence_counters (name, value) VALUES ('permission_version', 0);

CREATE TABLE principals (
    id           TEXT PRIMARY KEY,
    kind         TEXT NOT NULL CHECK (kind IN ('person', 'agent', 'app')),
    handle       TEXT NOT NULL,
    handle_key   TEXT NOT NULL UNIQUE,
    display_name TEXT NOT NULL,
    status       TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
    is_owner     INTEGER NOT NULL DEFAULT 0,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    disabled_at  TEXT
);

CREATE TABLE local_credentials (
    principal_id  TEXT PRIMARY KEY REFERENCES principals (id),
    password_hash TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);

CREATE TABLE auth_sessions (
    id           TEXT PRIMARY KEY,
    principal_id TEXT NOT NULL REFERENCES principals (id),
    token_hash   TEXT NOT NULL UNIQUE,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    revoked_at   TEXT
);
CREATE INDEX auth_sessions_principal ON auth_sessions (principal_id);

CREATE TABLE api_tokens (
    id           TEXT PRIMARY KEY,
    principal_id TEXT NOT NULL REFERENCES principals (id),
    name         TEXT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    created_at   TEXT NOT NULL,
    last_used_at TEXT,
    revoked_at   TEXT
);
CREATE INDEX api_tokens_principal ON api_tokens (principal_id);

CREATE TABLE spaces (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    created_by  TEXT NOT NULL REFERENCES principals (id),
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    archived_at TEXT
);

CREATE TABLE channels (
    id             TEXT PRIMARY KEY,
    space_id       TEXT NOT NULL REFERENCES spaces (id),
    kind           TEXT NOT NULL DEFAULT 'channel' CHECK (kind IN ('channel', 'dm')),
    name           TEXT NOT NULL,
    topic          TEXT NOT NULL DEFAULT '',
    main_thread_id TEXT NOT NULL,
    created_by     TEXT NOT NULL REFERENCES principals (id),
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL,
    archived_at    TEXT
);
CREATE INDEX channels_space ON channels (space_id, id);

CREATE TABLE threads (
    id              TEXT PRIMARY KEY,
    channel_id      TEXT NOT NULL REFERENCES channels (id),
    space_id        TEXT NOT NULL REFERENCES spaces (id),
    title           TEXT NOT NULL DEFAULT '',
    is_main         INTEGER NOT NULL DEFAULT 0,
    created_by      TEXT NOT NULL REFERENCES principals (id),
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    last_message_at TEXT,
    message_count   BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX threads_channel ON threads (channel_id, id);

CREATE TABLE grants (
    id            TEXT PRIMARY KEY,
    resource_kind TEXT NOT NULL CHECK (resource_kind IN ('space', 'channel')),
    resource_id   TEXT NOT NULL,
    principal_id  TEXT NOT NULL REFERENCES principals (id),
    level         TEXT NOT NULL CHECK (level IN ('view', 'post', 'invoke', 'manage')),
    level_rank    INTEGER NOT NULL,
    created_by    TEXT NOT NULL REFERENCES principals (id),
    created_at    TEXT NOT NULL,
    UNIQUE (resource_id, principal_id)
);
CREATE INDEX grants_principal ON grants (principal_id, resource_id);

CREATE TABLE messages (
    id            TEXT PRIMARY KEY,
    thread_id     TEXT NOT NULL REFERENCES threads (id),
    channel_id    TEXT NOT NULL REFERENCES channels (id),
    space_id      TEXT NOT NULL REFERENCES spaces (id),
    author_id     TEXT NOT NULL REFERENCES principals (id),
    content       TEXT NOT NULL,
    client_msg_id TEXT,
    version       INTEGER NOT NULL DEFAULT 1,
    created_at    TEXT NOT NULL,
    edited_at     TEXT,
    deleted_at    TEXT,
    UNIQUE (author_id, client_msg_id)
);
CREATE INDEX messages_thread ON messages (thread_id, id);

CREATE TABLE message_revisions (
    message_id TEXT NOT NULL REFERENCES messages (id),
    version    INTEGER NOT NULL,
    content    TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (message_id, version)
);

CREATE TABLE mentions (
    message_id   TEXT NOT NULL REFERENCES messages (id),
    principal_id TEXT NOT NULL REFERENCES principals (id),
    PRIMARY KEY (message_id, principal_id)
);
CREATE INDEX mentions_principal ON mentions (principal_id, message_id);

CREATE TABLE reactions (
    message_id   TEXT NOT NULL REFERENCES messages (id),
    principal_id TEXT NOT NULL REFERENCES principals (id),
    emoji        TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (message_id, emoji, principal_id)
);

CREATE TABLE event_log (
    seq          BIGINT PRIMARY KEY,
    type         TEXT NOT NULL,
    space_id     TEXT,
    channel_id   TEXT,
    thread_id    TEXT,
    principal_id TEXT,
    subject_id   TEXT,
    actor_id     TEXT,
    payload      TEXT NOT NULL,
    created_at   TEXT NOT NULL
);
CREATE INDEX event_log_subject ON event_log (subject_id);

CREATE TABLE idempotency_keys (
    principal_id  TEXT NOT NULL,
    idem_key      TEXT NOT NULL,
    fingerprint   TEXT NOT NULL,
    status_code   INTEGER NOT NULL,
    response_body TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    PRIMARY KEY (principal_id, idem_key)
);
