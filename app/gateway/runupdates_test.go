package gateway

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
)

// runUpdatedD is the data of a run.updated frame as a client reads it.
type runUpdatedD struct {
	RunID       kernel.ID      `json:"run_id"`
	ThreadID    kernel.ID      `json:"thread_id"`
	BaseVersion *int           `json:"base_version"`
	Version     int            `json:"version"`
	Patch       *runs.Patch    `json:"patch"`
	Document    *runs.Document `json:"document"`
}

func (c *client) expectRunUpdated() runUpdatedD {
	c.t.Helper()
	e := c.expectEvent()
	if e.Type != EvRunUpdated.Name || e.Seq != 0 {
		c.t.Fatalf("got %s with seq %d, want run.updated without seq", e.Type, e.Seq)
	}
	var d runUpdatedD
	if err := json.Unmarshal(e.Data, &d); err != nil {
		c.t.Fatal(err)
	}
	return d
}

// windowClock holds the ends of the coalescer's windows until the test lets them pass.
type windowClock struct {
	mu   sync.Mutex
	ends []func()
}

func (wc *windowClock) after(_ time.Duration, f func()) {
	wc.mu.Lock()
	wc.ends = append(wc.ends, f)
	wc.mu.Unlock()
}

// pass runs the window ends scheduled so far and reports how many there were.
func (wc *windowClock) pass() int {
	wc.mu.Lock()
	ends := wc.ends
	wc.ends = nil
	wc.mu.Unlock()
	for _, f := range ends {
		f()
	}
	return len(ends)
}

type fakeRuns struct {
	mu    sync.Mutex
	run   runs.Run
	reads int
}

func (f *fakeRuns) Run(ctx context.Context, id kernel.ID) (runs.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if id != f.run.ID {
		return runs.Run{}, kernel.ErrNotFound
	}
	return f.run, nil
}

// patched is the run r at the patch p's version after applying it.
func patched(t *testing.T, r *runs.Run, p runs.Patch) runs.Patched {
	t.Helper()
	doc, err := runs.Apply(r.Document, p)
	if err != nil {
		t.Fatal(err)
	}
	r.Document, r.Version = doc, doc.Version
	return runs.Patched{Run: *r, Patch: p}
}

func TestRunUpdated(t *testing.T) {
	w := newWorld(t)
	w.runTail()
	wc := &windowClock{}
	w.g.runs.after = wc.after
	reader := &fakeRuns{}
	w.g.deps.Runs = reader

	focus := func(token string, th kernel.ID) *client {
		c := w.connect()
		c.identify(token, -1)
		c.catchUp()
		c.send(`{"op":"focus","d":{"thread_id":"` + string(th) + `"}}`)
		c.send(`{"op":"heartbeat"}`)
		c.expect(OpHeartbeatAck)
		return c
	}
	ada := focus("ada", w.shutTh)         // reads the closed channel
	owner := focus("owner", w.shutTh)     // reads everything
	bob := focus("bob", w.shutTh)         // may not read it: his focus is ignored
	elsewhere := focus("owner", w.openTh) // the owner again, on another thread

	r := runs.Run{Summary: runs.Summary{ID: kernel.NewID(), ThreadID: w.shutTh, ChannelID: w.shut, SpaceID: w.space,
		Status: runs.StatusRunning}}
	appendOut := func(s string) runs.Patch { return runs.Patch{Version: r.Version + 1, OutputAppend: s} }
	ctx := context.Background()

	t.Run("the first patch goes out at once to those focused who may read the run", func(t *testing.T) {
		w.g.RunPatched(ctx, patched(t, &r, appendOut("a")))
		for _, c := range []*client{ada, owner} {
			d := c.expectRunUpdated()
			if d.RunID != r.ID || d.ThreadID != w.shutTh || d.BaseVersion == nil || *d.BaseVersion != 0 || d.Version != 1 ||
				d.Patch == nil || d.Patch.OutputAppend != "a" || d.Document != nil {
				t.Fatalf("got %+v", d)
			}
		}
		bob.quiet()
		elsewhere.quiet()
	})

	t.Run("the patches within the window go out merged at its end", func(t *testing.T) {
		w.g.RunPatched(ctx, patched(t, &r, appendOut("b")))
		st := "thinking"
		p := appendOut("c")
		p.Status = &st
		w.g.RunPatched(ctx, patched(t, &r, p))
		ada.quiet()
		if n := wc.pass(); n != 1 {
			t.Fatalf("%d window ends scheduled, want 1", n)
		}
		d := ada.expectRunUpdated()
		if *d.BaseVersion != 1 || d.Version != 3 || d.Patch.OutputAppend != "bc" || d.Patch.Status == nil || *d.Patch.Status != "thinking" {
			t.Fatalf("got base %d version %d patch %+v", *d.BaseVersion, d.Version, d.Patch)
		}
		owner.expectRunUpdated()
	})

	t.Run("a window without patches closes, and the next patch goes out at once", func(t *testing.T) {
		if n := wc.pass(); n != 1 {
			t.Fatalf("%d window ends scheduled, want 1", n)
		}
		ada.quiet()
		if n := wc.pass(); n != 0 {
			t.Fatalf("%d window ends scheduled after the window closed, want 0", n)
		}
		w.g.RunPatched(ctx, patched(t, &r, appendOut("d")))
		if d := ada.expectRunUpdated(); *d.BaseVersion != 3 || d.Version != 4 {
			t.Fatalf("got %+v", d)
		}
		owner.expectRunUpdated()
	})

	t.Run("a missing version makes the window send the document whole; a late patch is dropped", func(t *testing.T) {
		late := patched(t, &r, appendOut("e")) // version 5, told after 6
		w.g.RunPatched(ctx, patched(t, &r, appendOut("f")))
		w.g.RunPatched(ctx, late)
		wc.pass()
		d := ada.expectRunUpdated()
		if d.BaseVersion != nil || d.Patch != nil || d.Document == nil || d.Version != 6 || d.Document.Output != "abcdef" {
			t.Fatalf("got %+v", d)
		}
		owner.expectRunUpdated()
		ada.quiet()
	})

	t.Run("who lost the right to read the run gets nothing more", func(t *testing.T) {
		w.az.grant(w.ada.ID, w.shut, false)
		t.Cleanup(func() { w.az.grant(w.ada.ID, w.shut, true) })
		wc.pass() // closes the window
		w.g.RunPatched(ctx, patched(t, &r, appendOut("g")))
		owner.expectRunUpdated()
		ada.quiet()
	})

	t.Run("a patch signalled by another node sends the stored document, once", func(t *testing.T) {
		wc.pass()
		wc.pass() // the window is closed
		patched(t, &r, appendOut("h"))
		reader.mu.Lock()
		reader.run = r
		reader.mu.Unlock()
		w.g.runSignalled(ctx, r.ID, r.Version)
		d := owner.expectRunUpdated()
		if d.Document == nil || d.Version != 8 || d.Document.Output != "abcdefgh" {
			t.Fatalf("got %+v", d)
		}
		w.g.runSignalled(ctx, r.ID, r.Version) // again, or late: nothing to read or send
		owner.quiet()
		reader.mu.Lock()
		defer reader.mu.Unlock()
		if reader.reads != 1 {
			t.Fatalf("the run was read %d times, want 1", reader.reads)
		}
	})
}

func TestRunUpdatedFirstOutput(t *testing.T) {
	w := newWorld(t)
	w.runTail()
	wc := &windowClock{}
	w.g.runs.after = wc.after
	ada := w.connect()
	ada.identify("ada", -1)
	ada.catchUp()
	ada.send(`{"op":"focus","d":{"thread_id":"` + string(w.shutTh) + `"}}`)
	ada.send(`{"op":"heartbeat"}`)
	ada.expect(OpHeartbeatAck)
	r := runs.Run{Summary: runs.Summary{ID: kernel.NewID(), ThreadID: w.shutTh, ChannelID: w.shut, SpaceID: w.space,
		Status: runs.StatusRunning}}
	ctx := context.Background()
	thinking := "Thinking"

	t.Run("the patch that brings a run's first text goes out at once, within a window a status opened", func(t *testing.T) {
		w.g.RunPatched(ctx, patched(t, &r, runs.Patch{Version: 1, Status: &thinking}))
		if d := ada.expectRunUpdated(); d.Version != 1 || d.Patch == nil || d.Patch.Status == nil {
			t.Fatalf("the status: %+v", d)
		}
		w.g.RunPatched(ctx, patched(t, &r, runs.Patch{Version: 2, OutputAppend: "Hel"}))
		d := ada.expectRunUpdated()
		if d.BaseVersion == nil || *d.BaseVersion != 1 || d.Version != 2 || d.Patch == nil || d.Patch.OutputAppend != "Hel" {
			t.Fatalf("the first text: %+v", d)
		}
	})

	t.Run("the text after it is coalesced again", func(t *testing.T) {
		w.g.RunPatched(ctx, patched(t, &r, runs.Patch{Version: 3, OutputAppend: "lo"}))
		w.g.RunPatched(ctx, patched(t, &r, runs.Patch{Version: 4, OutputAppend: "!"}))
		ada.quiet()
		wc.pass()
		d := ada.expectRunUpdated()
		if *d.BaseVersion != 2 || d.Version != 4 || d.Patch.OutputAppend != "lo!" {
			t.Fatalf("got base %d version %d patch %+v", *d.BaseVersion, d.Version, d.Patch)
		}
	})
}
