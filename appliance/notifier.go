package appliance

import (
	"context"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/notify"
	"bothy.dev/bothy/app/push"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/engine"
)

// notifyPusher hands the notifier's pushes to Web Push, in the notifier's Unit of Work: notify
// sits below push's wiring and knows only its own Pusher port.
type notifyPusher struct{ push *push.Service }

func (p notifyPusher) Enqueue(ctx context.Context, principalID kernel.ID, n notify.Push) error {
	return p.push.Enqueue(ctx, principalID, push.Notification{MessageID: n.MessageID, ChannelID: n.ChannelID,
		ThreadID: n.ThreadID, Reason: n.Reason, Preview: n.Preview})
}

// notifierWake is what wakes the notifier besides this process's own commits (db.OnCommit): on
// PostgreSQL the head's advances, which the LISTEN side learns of from every node, so that a
// message posted on a node of role api reaches a worker's notifier at once rather than at its
// poll. On SQLite every commit is this process's: none.
func notifierWake(cfg engine.Name, db *storage.DB) notify.Waker {
	if cfg == engine.Postgres {
		return db
	}
	return nil
}
