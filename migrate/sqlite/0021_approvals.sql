-- Approvals: a run asks people whether it may go on. An approval belongs to its run and its
-- thread (whose readers see its card), names its approvers in approval_approvers (the inbox is a
-- range of that table's index per person, newest first), and is pending until an approver
-- decides, its timeout denies it, or its run ends. state says how it ended; decision and scope
-- are the approver's answer ("approve"/"deny", "once"/"run"), decided_by who gave it (NULL for a
-- timeout or a cancel). An approval for the run (scope "run") lets later requests of the same
-- title in that run pass without asking: approvals_run_title finds it. No CHECK on decision and
-- scope: the service validates them, and SQLite cannot change a constraint without rebuilding.

CREATE TABLE approvals (
    id         TEXT PRIMARY KEY,
    run_id     TEXT NOT NULL REFERENCES runs (id),
    agent_id   TEXT NOT NULL REFERENCES principals (id),
    thread_id  TEXT NOT NULL REFERENCES threads (id),
    channel_id TEXT NOT NULL REFERENCES channels (id),
    space_id   TEXT NOT NULL REFERENCES spaces (id),
    title      TEXT NOT NULL,
    detail     TEXT NOT NULL,
    state      TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'denied', 'timed_out', 'cancelled')),
    decision   TEXT,
    scope      TEXT,
    decided_by TEXT REFERENCES principals (id),
    decided_at TEXT,
    expires_at TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX approvals_run_state ON approvals (run_id, state);
CREATE INDEX approvals_run_title ON approvals (run_id, title);

CREATE TABLE approval_approvers (
    approval_id  TEXT NOT NULL REFERENCES approvals (id),
    principal_id TEXT NOT NULL REFERENCES principals (id),
    position     INTEGER NOT NULL,
    PRIMARY KEY (approval_id, principal_id)
);
CREATE INDEX approval_approvers_principal ON approval_approvers (principal_id, approval_id);
