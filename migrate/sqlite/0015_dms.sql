-- Direct messages. A DM is a channel of kind 'dm'; its participants are the principals holding a
-- grant on that very channel (written in the Unit of Work that creates the DM, so authz, its
-- cache and the gateway's delivery need nothing new). This table only adds what grants cannot
-- hold: the set of participants the DM was made for, as a key, so that the same set asks for
-- the same DM. The key is the sorted participant ids joined by ','; the unique index makes a
-- second DM for the same set impossible, also when two requests (or two nodes) race to create
-- it. NULL is a DM that no set names any more (a participant left and the remaining set has a
-- DM of its own), which never collides.
--
-- The DM channels live in one space of their own with a fixed id, created with the first DM
-- (its created_by must name a principal, and none exists when this migration runs) and never
-- listed (storage/chat.go leaves it out of every space read).

CREATE TABLE dms (
    channel_id      TEXT PRIMARY KEY REFERENCES channels (id),
    participant_key TEXT,
    created_at      TEXT NOT NULL
);

CREATE UNIQUE INDEX dms_participant_key ON dms (participant_key);
