-- Push subscriptions, the outbox of sends and the VAPID key: the same tables and indexes as
-- migrate/sqlite/0018_push.sql (a test holds it), which says what they hold.

CREATE TABLE push_subscriptions (
    id           TEXT COLLATE "C" PRIMARY KEY,
    principal_id TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    endpoint     TEXT COLLATE "C" NOT NULL UNIQUE,
    p256dh       TEXT COLLATE "C" NOT NULL,
    auth         TEXT COLLATE "C" NOT NULL,
    previews     INTEGER NOT NULL DEFAULT 0,
    created_at   TEXT COLLATE "C" NOT NULL,
    last_error   TEXT COLLATE "C"
);
CREATE INDEX push_subscriptions_principal ON push_subscriptions (principal_id, created_at);

CREATE TABLE vapid_keys (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    private_key TEXT COLLATE "C" NOT NULL,
    created_at  TEXT COLLATE "C" NOT NULL
);

CREATE TABLE push_outbox (
    id              TEXT COLLATE "C" PRIMARY KEY,
    subscription_id TEXT COLLATE "C" NOT NULL REFERENCES push_subscriptions (id) ON DELETE CASCADE,
    message_id      TEXT COLLATE "C" NOT NULL,
    channel_id      TEXT COLLATE "C" NOT NULL,
    thread_id       TEXT COLLATE "C" NOT NULL,
    reason          TEXT COLLATE "C" NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    due_at          TEXT COLLATE "C" NOT NULL,
    created_at      TEXT COLLATE "C" NOT NULL
);
CREATE INDEX push_outbox_due ON push_outbox (due_at, id);
CREATE INDEX push_outbox_subscription ON push_outbox (subscription_id);
