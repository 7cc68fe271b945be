package appliance

import (
	"context"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/notify"
	"bothy.dev/bothy/app/push"
)

// notifyPusher hands the notifier's pushes to Web Push, in the notifier's Unit of Work: notify
// sits below push's wiring and knows only its own Pusher port.
type notifyPusher struct{ push *push.Service }

func (p notifyPusher) Enqueue(ctx context.Context, principalID kernel.ID, n notify.Push) error {
	return p.push.Enqueue(ctx, principalID, push.Notification{MessageID: n.MessageID, ChannelID: n.ChannelID,
		ThreadID: n.ThreadID, Reason: n.Reason, Preview: n.Preview})
}
