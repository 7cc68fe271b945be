package inbox

import "bothy.dev/bothy/app/kernel"

// EvReadStateUpdated is the personal event of a read position moved by an explicit read (POST
// /threads/{id}/read): it reaches the reader's other connections and their catch-up, so that a
// thread read on one device is read on every other. A person's own message moves the position
// too, without this event: the client that posted knows.
var EvReadStateUpdated = kernel.DefineEvent[ReadState]("read_state.updated")
