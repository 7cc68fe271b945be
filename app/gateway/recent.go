package gateway

import (
	"slices"
	"sync"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// recent keeps the frames of the last events the hub handed out, so that the catch-up of a
// client that was away for a short while (a network drop, a laptop lid, a restart of its
// process, a whole office reconnecting after a deploy) is served from memory rather than read
// from the log again and encoded again: the common catch-up costs a visibility check and a copy
// per event. An older cursor, or a range the buffer no longer holds, reads the log as before.
//
// The buffer mirrors the log, redactions included: an event that redacts earlier ones in the
// log (kernel.Redacts) redacts their frames here when the hub hands it out, before any catch-up
// can replay past it.
type recent struct {
	mu       sync.RWMutex
	ring     []recentEvent // oldest at head, len is the count
	head     int
	n        int
	bytes    int // frame bytes held
	maxBytes int
}

// replayBufferBytes bounds the frames the buffer holds, whatever their count: at about 1 KiB
// per message event, the default 10,000 events take about 10 MiB.
const replayBufferBytes = 16 << 20

type recentEvent struct {
	seq     int64
	typ     string
	scope   kernel.Scope
	subject kernel.ID
	created time.Time
	frame   []byte
}

func newRecent(maxEvents, maxBytes int) *recent {
	if maxEvents <= 0 {
		return nil
	}
	return &recent{ring: make([]recentEvent, maxEvents), maxBytes: maxBytes}
}

// add appends the frame of e, which follows the last one added, evicting the oldest events
// beyond the bounds, and applies e's redactions to the frames held.
func (r *recent) add(e kernel.LoggedEvent, frame []byte) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n > 0 && r.at(r.n-1).seq != e.Seq-1 {
		r.clearLocked() // not the next one: the buffer must hold a gapless range
	}
	if types := kernel.Redacts(e.Type); len(types) > 0 {
		r.redactLocked(e, types)
	}
	for r.n > 0 && (r.n == len(r.ring) || r.bytes+len(frame) > r.maxBytes) {
		old := &r.ring[r.head]
		r.bytes -= len(old.frame)
		*old = recentEvent{}
		r.head = (r.head + 1) % len(r.ring)
		r.n--
	}
	if len(frame) > r.maxBytes {
		return // larger than the whole buffer: it starts after this event
	}
	*r.slot(r.n) = recentEvent{seq: e.Seq, typ: e.Type, scope: e.Scope, subject: e.SubjectID, created: e.CreatedAt, frame: frame}
	r.n++
	r.bytes += len(frame)
}

func (r *recent) slot(i int) *recentEvent { return &r.ring[(r.head+i)%len(r.ring)] }
func (r *recent) at(i int) recentEvent    { return *r.slot(i) }

func (r *recent) clearLocked() {
	clear(r.ring)
	r.head, r.n, r.bytes = 0, 0, 0
}

// redactLocked gives the held events of e's subject that e redacts e's payload, as the store
// did in e's transaction.
func (r *recent) redactLocked(e kernel.LoggedEvent, types []string) {
	for i := range r.n {
		ev := r.slot(i)
		if ev.subject != e.SubjectID || !slices.Contains(types, ev.typ) {
			continue
		}
		old := ev.frame
		ev.frame = EventFrame(kernel.LoggedEvent{Seq: ev.seq, Type: ev.typ, Scope: ev.scope, SubjectID: ev.subject,
			Payload: e.Payload, CreatedAt: ev.created})
		r.bytes += len(ev.frame) - len(old)
	}
}

// read appends to dst the held events in (after, upTo], at most limit of them, and reports
// whether the buffer holds that range from after+1 on; when it does not, dst is unchanged.
func (r *recent) read(dst []recentEvent, after, upTo int64, limit int) ([]recentEvent, bool) {
	if r == nil || after < 0 {
		return dst, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.n == 0 {
		return dst, false
	}
	first, last := r.at(0).seq, r.at(r.n-1).seq
	if after+1 < first || after >= last {
		return dst, false
	}
	for i := int(after + 1 - first); i < r.n && len(dst) < limit; i++ {
		ev := r.at(i)
		if ev.seq > upTo {
			break
		}
		dst = append(dst, ev)
	}
	return dst, true
}
