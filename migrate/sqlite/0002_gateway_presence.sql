-- The live people connections of each node of a cluster (cluster.mode multi): every api
-- node writes the number of gateway connections each person has on it, refreshes its rows every
-- cluster.presence_flush_interval and deletes them when it stops; rows older than
-- cluster.presence_ttl belong to a node that died and are ignored and deleted. A single node keeps
-- presence in memory and leaves the table empty. node_id is the process's id (UUIDv7, new at
-- every start), not a principal: no foreign key.

CREATE TABLE gateway_presence (
    node_id      TEXT NOT NULL,
    principal_id TEXT NOT NULL REFERENCES principals (id),
    connections  INTEGER NOT NULL CHECK (connections > 0),
    updated_at   TEXT NOT NULL,
    PRIMARY KEY (node_id, principal_id)
);
CREATE INDEX gateway_presence_principal ON gateway_presence (principal_id);
CREATE INDEX gateway_presence_updated ON gateway_presence (updated_at);
