-- Web Push: the push subscriptions of people's browsers and the instance's VAPID key.
--
-- A push subscription is one browser's endpoint at its push service with the keys the payload is
-- encrypted for (p256dh, auth: base64url). An endpoint belongs to one person (unique); a person's
-- subscriptions are found by the index on principal_id. previews is 1 when the payload may carry
-- the start of the message's text. last_error says why the last send did not deliver.
--
-- push_outbox holds the sends not done yet: one row per notification and subscription, ids and
-- the reason only, never text. due_at is when it may be sent (now, a retry's backoff, or the end
-- of the lease of a sender that claimed it); the index serves the claim of the earliest due.
--
-- vapid_keys holds one row, id 1: the instance's P-256 key pair that signs every push request
-- (private_key: base64 of the 32-byte scalar), made by whichever node needs it first.

CREATE TABLE push_subscriptions (
    id           TEXT PRIMARY KEY,
    principal_id TEXT NOT NULL REFERENCES principals (id),
    endpoint     TEXT NOT NULL UNIQUE,
    p256dh       TEXT NOT NULL,
    auth         TEXT NOT NULL,
    previews     INTEGER NOT NULL DEFAULT 0,
    created_at   TEXT NOT NULL,
    last_error   TEXT
);
CREATE INDEX push_subscriptions_principal ON push_subscriptions (principal_id, created_at);

CREATE TABLE vapid_keys (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    private_key TEXT NOT NULL,
    created_at  TEXT NOT NULL
);

CREATE TABLE push_outbox (
    id              TEXT PRIMARY KEY,
    subscription_id TEXT NOT NULL REFERENCES push_subscriptions (id) ON DELETE CASCADE,
    message_id      TEXT NOT NULL,
    channel_id      TEXT NOT NULL,
    thread_id       TEXT NOT NULL,
    reason          TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    due_at          TEXT NOT NULL,
    created_at      TEXT NOT NULL
);
CREATE INDEX push_outbox_due ON push_outbox (due_at, id);
CREATE INDEX push_outbox_subscription ON push_outbox (subscription_id);
