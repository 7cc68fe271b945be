package gateway

import (
	"context"
	"errors"
	"fmt"

	"bothy.dev/bothy/app/catchup"
)

// retainedLog is the part of the log that tells where retention (sync.event_retention) left
// it; *storage.DB implements it. A Log without it keeps every event.
type retainedLog interface {
	RetainedAfter(ctx context.Context) (int64, error)
}

// behindRetention refuses a replay from cursor when retention removed events after it: the
// client could never receive them, so it starts again from the head (4016, with the head in
// the reason). A cursor the check lets through may still be refused by the replay itself, when
// retention passes it meanwhile (catchup.ResyncRequired, the same close). It returns code 0 when
// the replay may go on.
func (g *Gateway) behindRetention(ctx context.Context, cursor int64) (CloseCode, string) {
	rl, ok := g.deps.Log.(retainedLog)
	if !ok {
		return 0, ""
	}
	retained, err := rl.RetainedAfter(ctx)
	if err != nil {
		return g.failed("read the kept log's start", err), ""
	}
	if cursor >= retained {
		return 0, ""
	}
	head, err := g.deps.Log.ReadHead(ctx)
	if err != nil {
		return g.failed("read the head", err), ""
	}
	return CloseResyncRequired, resyncReason(max(head, g.deps.Log.Head()))
}

// resyncReason is the reason of a 4016 for a cursor behind retention: where the client goes on
// once it has reloaded its state. A close reason holds at most 123 bytes.
func resyncReason(head int64) string {
	return fmt.Sprintf("events after the cursor were pruned; reload over REST, then go on from head_seq %d", head)
}

// closeReason is the reason a close for err carries: the head to start again from for a
// cursor behind retention, else the code's name.
func closeReason(err error) string {
	if re := (*catchup.ResyncRequired)(nil); errors.As(err, &re) {
		return resyncReason(re.HeadSeq)
	}
	return ""
}
