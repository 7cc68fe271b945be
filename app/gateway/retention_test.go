package gateway

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/kernel"
)

// closeReason is the reason of the client's close frame.
func (c *client) closeReason() string {
	c.tr.mu.Lock()
	defer c.tr.mu.Unlock()
	return c.tr.reason
}

func TestCursorBehindRetention(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.ReplayBufferEvents = 0 })
	w.runTail()
	for i := range 6 {
		w.post(w.open, w.openTh, fmt.Sprint(i))
	}
	w.waitHub(6)
	w.log.prune(3) // the oldest kept is 4
	wantHead := fmt.Sprintf("head_seq %d", 6)

	for _, cursor := range []int64{0, 2} {
		c := w.connect()
		c.send(fmt.Sprintf(`{"op":"identify","d":{"token":"ada","cursor":%d}}`, cursor))
		c.expectClose(CloseResyncRequired)
		if r := c.closeReason(); !strings.Contains(r, wantHead) || len(r) > 123 {
			t.Fatalf("cursor %d: the reason %q does not say where to go on (%s), in 123 bytes", cursor, r, wantHead)
		}
	}

	t.Run("the cursor just before the oldest kept event replays what is kept", func(t *testing.T) {
		c := w.connect()
		c.identify("ada", 3)
		if seqs, head := c.catchUp(); !slices.Equal(seqs, []int64{4, 5, 6}) || head != 6 {
			t.Fatalf("replayed %v up to %d", seqs, head)
		}
	})
	t.Run("the client reloads and comes back without a cursor, or from the head, and gets what follows", func(t *testing.T) {
		fresh := w.connect()
		fresh.identify("ada", -1)
		fresh.catchUp()
		fromHead := w.connect()
		fromHead.identify("ada", 6)
		fromHead.catchUp()
		seq := w.post(w.open, w.openTh, "after the resync")
		for _, c := range []*client{fresh, fromHead} {
			if e := c.expectEvent(); e.Seq != seq {
				t.Fatalf("got %d, want %d", e.Seq, seq)
			}
		}
	})
	t.Run("a resume from a pruned seq is closed the same way", func(t *testing.T) {
		c := w.connect()
		r := c.identify("ada", -1)
		c.catchUp()
		c.hangUp()
		waitFor(t, "the drop", func() bool { return c.tr.closeCode() != 0 })
		again := w.connect()
		again.send(fmt.Sprintf(`{"op":"resume","d":{"session_id":%q,"seq":1}}`, r.SessionID))
		again.expectClose(CloseResyncRequired)
	})
	t.Run("retention passing the cursor during the replay closes with 4016 and the head", func(t *testing.T) {
		gated := &pruneOnRead{fakeLog: w.log, to: 5}
		w.g.deps.CatchUp = catchup.New(catchup.Deps{Log: gated, Scoper: w.az})
		t.Cleanup(func() { w.g.deps.CatchUp = catchup.New(catchup.Deps{Log: w.log, Scoper: w.az}) })
		c := w.connect()
		c.send(`{"op":"identify","d":{"token":"ada","cursor":3}}`) // kept when checked, pruned while read
		c.expectClose(CloseResyncRequired)
		if r := c.closeReason(); !strings.Contains(r, "head_seq ") {
			t.Fatalf("the reason %q does not say where to go on", r)
		}
	})
}

// pruneOnRead prunes the log up to to once it has answered a read: retention that runs while a
// replay reads.
type pruneOnRead struct {
	*fakeLog
	to int64
}

func (l *pruneOnRead) EventsAfter(ctx context.Context, after int64, limit int) ([]kernel.LoggedEvent, error) {
	evs, err := l.fakeLog.EventsAfter(ctx, after, limit)
	l.prune(l.to)
	return evs, err
}

func TestConsumerBehindRetention(t *testing.T) {
	w, fc := consumerWorld(t)
	for i := range 5 {
		w.post(w.open, w.openTh, fmt.Sprint(i))
	}
	w.waitHub(5)
	fc.createdAt(w.bot.ID, 1)
	w.log.prune(3)

	c := w.connect()
	c.send(`{"op":"identify","d":{"token":"bot","cursor":5}}`) // its own cursor does not count
	c.expectClose(CloseResyncRequired)
	if r := c.closeReason(); !strings.Contains(r, "head_seq 5") {
		t.Fatalf("the reason %q does not say where to go on", r)
	}

	// The agent acknowledges where it goes on from (over REST, as its connection is closed),
	// then connects again and gets what follows.
	if err := fc.SaveAcks(context.Background(), map[kernel.ID]int64{w.bot.ID: 5}, w.clock.Now()); err != nil {
		t.Fatal(err)
	}
	again := w.connect()
	again.identify("bot", -1)
	if seqs, head := again.catchUp(); len(seqs) != 0 || head != 5 {
		t.Fatalf("replayed %v up to %d after the ack of the head", seqs, head)
	}
	seq := w.post(w.open, w.openTh, "after")
	if e := again.expectEvent(); e.Seq != seq {
		t.Fatalf("got %d, want %d", e.Seq, seq)
	}
}
