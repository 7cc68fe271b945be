-- The live people connections of each node of a cluster: the same table as
-- migrate/sqlite/0002_gateway_presence.sql (a test holds it), ids and times COLLATE "C" as in
-- 0001. Every api node writes the number of gateway connections each person has on it,
-- refreshes its rows every cluster.presence_flush_interval and deletes them when it stops; rows
-- older than cluster.presence_ttl belong to a node that died and are ignored and deleted.

CREATE TABLE gateway_presence (
    node_id      TEXT COLLATE "C" NOT NULL,
    principal_id TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    connections  INTEGER NOT NULL CHECK (connections > 0),
    updated_at   TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (node_id, principal_id)
);
CREATE INDEX gateway_presence_principal ON gateway_presence (principal_id);
CREATE INDEX gateway_presence_updated ON gateway_presence (updated_at);
