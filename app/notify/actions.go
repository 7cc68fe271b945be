package notify

import "bothy.dev/bothy/app/kernel"

// Actions of notify: a person's own levels, which need only that the person may read the channel
// or the thread.
const (
	ActLevelRead        kernel.Action = "notification.level.read"
	ActLevelSet         kernel.Action = "notification.level.set"
	ActSubscriptionRead kernel.Action = "thread.subscription.read"
	ActSubscriptionSet  kernel.Action = "thread.subscription.set"
)
