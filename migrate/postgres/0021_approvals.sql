-- Approvals: the same tables and indexes as migrate/sqlite/0021_approvals.sql (a test holds
-- it), which says what they hold and why.

CREATE TABLE approvals (
    id         TEXT COLLATE "C" PRIMARY KEY,
    run_id     TEXT COLLATE "C" NOT NULL REFERENCES runs (id),
    agent_id   TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    thread_id  TEXT COLLATE "C" NOT NULL REFERENCES threads (id),
    channel_id TEXT COLLATE "C" NOT NULL REFERENCES channels (id),
    space_id   TEXT COLLATE "C" NOT NULL REFERENCES spaces (id),
    title      TEXT COLLATE "C" NOT NULL,
    detail     TEXT NOT NULL,
    state      TEXT COLLATE "C" NOT NULL CHECK (state IN ('pending', 'approved', 'denied', 'timed_out', 'cancelled')),
    decision   TEXT COLLATE "C",
    scope      TEXT COLLATE "C",
    decided_by TEXT COLLATE "C" REFERENCES principals (id),
    decided_at TEXT COLLATE "C",
    expires_at TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX approvals_run_state ON approvals (run_id, state);
CREATE INDEX approvals_run_title ON approvals (run_id, title);

CREATE TABLE approval_approvers (
    approval_id  TEXT COLLATE "C" NOT NULL REFERENCES approvals (id),
    principal_id TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    position     INTEGER NOT NULL,
    PRIMARY KEY (approval_id, principal_id)
);
CREATE INDEX approval_approvers_principal ON approval_approvers (principal_id, approval_id);
