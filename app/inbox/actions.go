package inbox

import "bothy.dev/bothy/app/kernel"

// Actions of the inbox: moving one's read position in a thread (decided like reading the
// thread), and reading one's own unread counts and mentions.
const (
	ActReadMark     kernel.Action = "read_state.update"
	ActUnreadRead   kernel.Action = "inbox.unread.read"
	ActMentionsRead kernel.Action = "inbox.mentions.read"
)
