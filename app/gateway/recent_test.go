package gateway

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

func recentEv(seq int64, typ string, subject kernel.ID, payload string) kernel.LoggedEvent {
	return kernel.LoggedEvent{Seq: seq, Type: typ, Scope: kernel.Scope{ChannelID: "c"}, SubjectID: subject,
		Payload: []byte(payload), CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, int(seq), time.UTC)}
}

func addAll(r *recent, evs ...kernel.LoggedEvent) {
	for _, e := range evs {
		r.add(e, EventFrame(e))
	}
}

func seqsOf(evs []recentEvent) []int64 {
	var out []int64
	for _, e := range evs {
		out = append(out, e.seq)
	}
	return out
}

func TestRecent(t *testing.T) {
	t.Run("reads a range it holds, and only that", func(t *testing.T) {
		r := newRecent(10, 1<<20)
		for s := int64(5); s <= 9; s++ {
			addAll(r, recentEv(s, "x", "", `{}`))
		}
		for _, c := range []struct {
			after, upTo int64
			limit       int
			want        []int64
			ok          bool
		}{
			{4, 9, 100, []int64{5, 6, 7, 8, 9}, true},
			{6, 8, 100, []int64{7, 8}, true},
			{4, 9, 2, []int64{5, 6}, true},
			{3, 9, 100, nil, false},  // seq 4 is not held
			{9, 12, 100, nil, false}, // nothing after the last
			{-1, 9, 100, nil, false},
		} {
			got, ok := r.read(nil, c.after, c.upTo, c.limit)
			if ok != c.ok || !slices.Equal(seqsOf(got), c.want) {
				t.Errorf("read(%d, %d, %d) = %v, %v; want %v, %v", c.after, c.upTo, c.limit, seqsOf(got), ok, c.want, c.ok)
			}
		}
	})
	t.Run("evicts the oldest beyond its count and its bytes", func(t *testing.T) {
		r := newRecent(3, 1<<20)
		for s := int64(1); s <= 5; s++ {
			addAll(r, recentEv(s, "x", "", `{}`))
		}
		if got, ok := r.read(nil, 2, 5, 10); !ok || !slices.Equal(seqsOf(got), []int64{3, 4, 5}) {
			t.Fatalf("by count: %v %v", seqsOf(got), ok)
		}
		one := len(EventFrame(recentEv(1, "x", "", `{}`)))
		r = newRecent(100, 2*one+one/2)
		for s := int64(1); s <= 5; s++ {
			addAll(r, recentEv(s, "x", "", `{}`))
		}
		if got, ok := r.read(nil, 3, 5, 10); !ok || !slices.Equal(seqsOf(got), []int64{4, 5}) || r.bytes != 2*one {
			t.Fatalf("by bytes: %v %v, %d bytes", seqsOf(got), ok, r.bytes)
		}
	})
	t.Run("starts again after a gap", func(t *testing.T) {
		r := newRecent(10, 1<<20)
		addAll(r, recentEv(1, "x", "", `{}`), recentEv(2, "x", "", `{}`), recentEv(7, "x", "", `{}`))
		if _, ok := r.read(nil, 0, 7, 10); ok {
			t.Fatal("read across a gap")
		}
		if got, ok := r.read(nil, 6, 7, 10); !ok || !slices.Equal(seqsOf(got), []int64{7}) {
			t.Fatalf("after the gap: %v %v", seqsOf(got), ok)
		}
	})
	t.Run("redacts as the log does when a message is deleted", func(t *testing.T) {
		r := newRecent(10, 1<<20)
		msg, other := kernel.NewID(), kernel.NewID()
		created := recentEv(1, messaging.EvMessageCreated.Name, msg, `{"content":"secret"}`)
		edited := recentEv(2, messaging.EvMessageUpdated.Name, msg, `{"content":"secret too"}`)
		kept := recentEv(3, messaging.EvMessageCreated.Name, other, `{"content":"still here"}`)
		deleted := recentEv(4, messaging.EvMessageDeleted.Name, msg, `{"content":"","deleted":true}`)
		addAll(r, created, edited, kept, deleted)
		got, _ := r.read(nil, 0, 4, 10)
		for i, want := range []kernel.LoggedEvent{created, edited, kept, deleted} {
			if i < 2 {
				want.Payload = deleted.Payload
			}
			if !bytes.Equal(got[i].frame, EventFrame(want)) {
				t.Errorf("frame %d:\n got %s\nwant %s", i, got[i].frame, EventFrame(want))
			}
		}
		if bytes.Contains(bytes.Join([][]byte{got[0].frame, got[1].frame}, nil), []byte("secret")) {
			t.Error("the deleted content is still held")
		}
	})
	t.Run("none when switched off", func(t *testing.T) {
		var r *recent = newRecent(-1, 1<<20)
		addAll(r, recentEv(1, "x", "", `{}`))
		if _, ok := r.read(nil, 0, 1, 10); ok {
			t.Fatal("a switched-off buffer read")
		}
	})
}

// TestCatchUpFromMemoryMatchesTheLog replays the same range to the same reader from the buffer
// and from the log: the same events (only those it may see) in the same frames. A cursor older
// than the buffer reads the log for what it lacks, then the buffer.
var scopeIDs = regexp.MustCompile(`,"(space|channel|thread)_id":"[^"]*"`)

func TestCatchUpFromMemoryMatchesTheLog(t *testing.T) {
	replay := func(tune func(*Config), cursor int64) (frames []string, logReads []int64) {
		w := newWorld(t, tune)
		w.runTail()
		for i := range 12 {
			w.post(w.open, w.openTh, fmt.Sprint("open ", i))
			w.post(w.shut, w.shutTh, fmt.Sprint("shut ", i))
		}
		w.waitHub(24)
		gate := &gatedCatchUp{inner: w.g.deps.CatchUp, started: make(chan struct{}), release: make(chan struct{})}
		close(gate.release)
		w.g.deps.CatchUp = gate
		c := w.connect()
		c.identify("bob", cursor)
		for {
			f := c.next()
			if f.Op == OpCatchupComplete {
				break
			}
			if f.Op == OpEvent {
				// Each world has ids of its own: compare what is not an id.
				frames = append(frames, scopeIDs.ReplaceAllString(string(f.D), ""))
			}
		}
		gate.callsMu.Lock()
		defer gate.callsMu.Unlock()
		return frames, gate.afterArg
	}
	fromLog, reads := replay(func(c *Config) { c.ReplayBufferEvents = 0 }, 3)
	if len(fromLog) != 10 || len(reads) == 0 {
		t.Fatalf("the log replayed %d events (want bob's 10 after seq 3) in %d reads", len(fromLog), len(reads))
	}
	fromMemory, reads := replay(nil, 3)
	if !slices.Equal(fromMemory, fromLog) {
		t.Fatalf("from memory:\n%s\nfrom the log:\n%s", fromMemory, fromLog)
	}
	if len(reads) != 0 {
		t.Fatalf("a catch-up the buffer holds read the log after %v", reads)
	}
	partly, reads := replay(func(c *Config) { c.ReplayBufferEvents = 8 }, 3)
	if !slices.Equal(partly, fromLog) {
		t.Fatalf("partly from memory:\n%s\nfrom the log:\n%s", partly, fromLog)
	}
	if !slices.Equal(reads, []int64{3}) {
		t.Fatalf("the log was read after %v, want [3] (then the buffer's 8)", reads)
	}
}
