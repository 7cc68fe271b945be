package catchup

import "bothy.dev/bothy/app/kernel"

// Actions of catch-up.
const (
	// ActEventsCatchUp is a principal reading the log after a cursor.
	ActEventsCatchUp kernel.Action = "events.catch_up"
	// ActAgentConsume is an agent reading and acknowledging its own consumer (the REST poll).
	ActAgentConsume kernel.Action = "agent.consume"
)
