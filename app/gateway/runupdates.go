package gateway

import (
	"context"
	"sync"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
)

// RunReader reads a run with its stored document, without authorizing; storage's run store
// implements it. The gateway reads one when another node signals a patch (the signal
// carries ids, the document comes from the database).
type RunReader interface {
	// Run loads a run with its document. Errors: not_found.
	Run(ctx context.Context, id kernel.ID) (runs.Run, error)
}

// RunPatched fans a stored patch out as run.updated (runs.Service.OnPatched calls it after the
// commit). The first patch of a run after a quiet spell goes out at once, and so does the one that
// brings the run's first output; the others that follow within Config.RunPatchCoalesce of a frame
// are merged (runs.Merge) into one frame at the end of that window, so a run that streams tokens costs each client a few frames a second. With
// several nodes the others are signalled (gateway.run, the run's id and version) and send their
// clients the stored document.
func (g *Gateway) RunPatched(ctx context.Context, p runs.Patched) {
	patch := p.Patch
	g.runs.offer(p.Run, &patch)
	if g.cluster != nil {
		g.cluster.publish(signal{Kind: signalRun, RunID: p.Run.ID, Version: p.Run.Version})
	}
}

// runSignalled acts on gateway.run from another node: the patch is stored, so the stored document
// goes to this node's clients, as a snapshot. A signal that is late or repeated finds the version
// sent already and changes nothing.
func (g *Gateway) runSignalled(ctx context.Context, id kernel.ID, version int) {
	if g.deps.Runs == nil || !g.runs.behind(id, version) {
		return
	}
	r, err := g.deps.Runs.Run(ctx, id)
	if err != nil {
		if kernel.CodeOf(err) != kernel.CodeNotFound {
			g.log.Warn("gateway: run patched on another node: read the run", "run", id, "err", err)
		}
		return
	}
	g.runs.offer(r, nil)
}

// runFanout is the coalescer of run.updated. It keeps a window per run that sent a frame in the
// last interval: the version its clients were brought to, and what came since (one merged patch,
// or, when patches did not follow each other, the latest document to send whole).
type runFanout struct {
	hub      *hub
	authz    kernel.Authorizer
	interval time.Duration // 0: every patch goes out at once

	mu      sync.Mutex
	windows map[kernel.ID]*runWindow
	// after schedules the end of a window; tests replace it.
	after func(time.Duration, func())
}

type runWindow struct {
	run     runs.Run    // the latest run known: its Document is at run.Version
	sent    int         // the version the last frame brought focused clients to
	pending *runs.Patch // the patches since that frame, merged; nil: none or snapshot
	// snapshot: what came since cannot be told as one patch from sent (a version went missing,
	// or came from another node as a document): the next frame sends the document whole.
	snapshot bool
}

func newRunFanout(h *hub, az kernel.Authorizer, interval time.Duration) *runFanout {
	return &runFanout{hub: h, authz: az, interval: interval, windows: map[kernel.ID]*runWindow{},
		after: func(d time.Duration, f func()) { time.AfterFunc(d, f) }}
}

// behind reports whether a frame of version would tell this node's clients something new.
func (f *runFanout) behind(id kernel.ID, version int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.windows[id]
	return w == nil || version > w.run.Version
}

// offer takes r at r.Version, reached by patch (nil: r's document is to be sent whole). Frames
// are handed to the connections under f.mu, so that two frames of one run never cross.
func (f *runFanout) offer(r runs.Run, patch *runs.Patch) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.windows[r.ID]
	if w == nil {
		// No frame in the last interval: this one goes now, and opens a window.
		frame := runUpdatedFrame(r, patch)
		f.send(r, frame)
		if f.interval <= 0 {
			return
		}
		f.windows[r.ID] = &runWindow{run: r, sent: r.Version}
		f.after(f.interval, func() { f.windowEnd(r.ID) })
		return
	}
	if r.Version <= w.run.Version {
		return // late or repeated: the window knows a newer version already
	}
	firstText := w.run.Document.Output == "" && r.Document.Output != ""
	w.run = r
	switch {
	case patch == nil || w.snapshot:
		w.pending, w.snapshot = nil, true
	case w.pending == nil && patch.BaseVersion() == w.sent:
		w.pending = patch
	case w.pending != nil:
		if m, ok := runs.Merge(*w.pending, *patch); ok {
			w.pending = &m
			break
		}
		w.pending, w.snapshot = nil, true
	default:
		w.snapshot = true
	}
	if firstText {
		// The run's first text goes out at once, with what the window held: it is what the
		// people watching wait for, and the status patch an agent sends just before it
		// ("Thinking") must not hold it back for a window. The window stays open.
		f.send(w.run, runUpdatedFrame(w.run, w.pending))
		w.sent, w.pending, w.snapshot = w.run.Version, nil, false
	}
}

// windowEnd sends what the window gathered and keeps it open for another interval, or closes it
// when nothing came.
func (f *runFanout) windowEnd(id kernel.ID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.windows[id]
	if w == nil {
		return
	}
	if w.pending == nil && !w.snapshot {
		delete(f.windows, id)
		return
	}
	f.send(w.run, runUpdatedFrame(w.run, w.pending))
	w.sent, w.pending, w.snapshot = w.run.Version, nil, false
	f.after(f.interval, func() { f.windowEnd(id) })
}

// send hands frame to the connections focused on r's thread whose principal may read the run
// now; like typing it is dropped for a connection that is catching up or full (the client reads
// GET /api/v1/runs/{id} when the next frame does not follow its version).
func (f *runFanout) send(r runs.Run, frame []byte) {
	res := r.Resource()
	for _, c := range f.hub.focusedOn(r.ThreadID) {
		c.mu.Lock()
		actor := c.actor
		c.mu.Unlock()
		// The permission cache answers without I/O; the context is not used for waiting.
		if f.authz.Authorize(context.Background(), actor, runs.ActRunRead, res) != nil {
			continue
		}
		c.offerEphemeral(frame)
	}
}

// runUpdatedFrame is the run.updated frame of r: patch from its base version to r.Version, or,
// when patch is nil, r's document whole (base_version null).
func runUpdatedFrame(r runs.Run, patch *runs.Patch) []byte {
	d := RunUpdated{RunID: r.ID, ThreadID: r.ThreadID, ChannelID: r.ChannelID, Version: r.Version}
	if patch != nil {
		base := patch.BaseVersion()
		d.BaseVersion, d.Patch = &base, patch
	} else {
		doc := r.Document
		d.Document = &doc
	}
	return ephemeralFrame(EvRunUpdated, d)
}
