package catchup_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

// fakeLog is a log held in a slice, seq = index + 1; it counts the rows it hands out.
type fakeLog struct {
	mu      sync.Mutex
	events  []kernel.LoggedEvent
	scanned int
	pruned  int64 // the events up to here were removed by retention
}

var _ catchup.Log = (*fakeLog)(nil)

func (l *fakeLog) EventsAfter(ctx context.Context, after int64, limit int) ([]kernel.LoggedEvent, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []kernel.LoggedEvent
	for _, e := range l.events {
		if e.Seq > after && e.Seq > l.pruned && len(out) < limit {
			out = append(out, e)
		}
	}
	l.scanned += len(out)
	return out, nil
}

func (l *fakeLog) Head() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(len(l.events))
}

func (l *fakeLog) ReadHead(ctx context.Context) (int64, error) { return l.Head(), nil }

func (l *fakeLog) RetainedAfter(ctx context.Context) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pruned, nil
}

// prune removes the events up to seq, as retention would (the slice keeps their places).
func (l *fakeLog) prune(seq int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pruned = seq
}

func (l *fakeLog) add(typ string, sc kernel.Scope) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, kernel.LoggedEvent{Seq: int64(len(l.events) + 1), Type: typ, Scope: sc, Payload: []byte(`{}`)})
}

// fakeScoper answers a visibility built from sets, and records the action it was asked for.
type fakeScoper struct {
	spaces, channels map[kernel.ID]bool
	asked            kernel.Action
}

var _ kernel.Scoper = (*fakeScoper)(nil)

func (s *fakeScoper) Visible(ctx context.Context, actor kernel.Actor, action kernel.Action) (kernel.Visibility, error) {
	if !actor.Authenticated() {
		return nil, kernel.Errorf(kernel.CodeUnauthenticated, "no principal")
	}
	s.asked = action
	return vis{s.spaces, s.channels}, nil
}

type vis struct{ spaces, channels map[kernel.ID]bool }

func (v vis) Space(id kernel.ID) bool   { return v.spaces[id] }
func (v vis) Channel(id kernel.ID) bool { return v.channels[id] }
func (v vis) All() bool                 { return false }

var (
	alice = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson}
	agent = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindAgent}
	space = kernel.NewID()
	open  = kernel.NewID()
	shut  = kernel.NewID()
	other = kernel.NewID()
)

func seqs(evs []kernel.LoggedEvent) []int64 {
	out := []int64{}
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

func TestCatchUp(t *testing.T) {
	ctx := context.Background()
	mixed := func() *fakeLog {
		l := &fakeLog{}
		l.add(chat.EvSpaceCreated.Name, kernel.Scope{SpaceID: space})                                         // 1 visible space
		l.add(chat.EvChannelCreated.Name, kernel.Scope{SpaceID: space, ChannelID: open})                      // 2 visible channel
		l.add(messaging.EvMessageCreated.Name, kernel.Scope{SpaceID: space, ChannelID: shut, ThreadID: open}) // 3 invisible channel
		l.add(identity.EvUserCreated.Name, kernel.Scope{})                                                    // 4 for every person
		l.add(identity.EvSessionRevoked.Name, kernel.Scope{PrincipalID: alice.ID})                            // 5 alice's
		l.add(identity.EvSessionRevoked.Name, kernel.Scope{PrincipalID: agent.ID})                            // 6 the agent's
		l.add(chat.EvSpaceUpdated.Name, kernel.Scope{SpaceID: other})                                         // 7 invisible space
		l.add(messaging.EvMessageCreated.Name, kernel.Scope{SpaceID: space, ChannelID: open, ThreadID: open}) // 8 visible channel
		return l
	}
	tests := []struct {
		name      string
		actor     kernel.Actor
		after     int64
		limit     int
		want      []int64
		wantNext  int64
		wantCode  kernel.Code
		wantField string
	}{
		{name: "keeps what a person may see and skips the rest", actor: alice, want: []int64{1, 2, 4, 5, 8}, wantNext: 8},
		{name: "gives an agent its personal events but not the person-wide ones", actor: agent, want: []int64{1, 2, 6, 8}, wantNext: 8},
		{name: "stops at the limit with next_after at the last event given", actor: alice, limit: 2, want: []int64{1, 2}, wantNext: 2},
		{name: "moves past invisible events at the cursor", actor: alice, after: 2, limit: 2, want: []int64{4, 5}, wantNext: 5},
		{name: "answers nothing but the head at the head", actor: alice, after: 8, want: []int64{}, wantNext: 8},
		{name: "refuses a negative cursor", actor: alice, after: -1, wantCode: kernel.CodeCursorInvalid},
		{name: "refuses a cursor beyond the head", actor: alice, after: 9, wantCode: kernel.CodeCursorInvalid},
		{name: "refuses a limit over 1000", actor: alice, limit: 1001, wantCode: kernel.CodeValidation, wantField: "limit"},
		{name: "refuses a negative limit", actor: alice, limit: -5, wantCode: kernel.CodeValidation, wantField: "limit"},
		{name: "refuses the anonymous actor", actor: kernel.Anonymous, wantCode: kernel.CodeUnauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := mixed()
			sc := &fakeScoper{spaces: map[kernel.ID]bool{space: true}, channels: map[kernel.ID]bool{open: true}}
			p, err := catchup.New(catchup.Deps{Log: l, Scoper: sc}).CatchUp(ctx, tt.actor, tt.after, tt.limit)
			if tt.wantCode != (kernel.Code{}) {
				if kernel.CodeOf(err) != tt.wantCode {
					t.Fatalf("err = %v, want %s", err, tt.wantCode)
				}
				if e, _ := err.(*kernel.Error); tt.wantField != "" && e.Field != tt.wantField {
					t.Fatalf("field = %q", e.Field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sc.asked != catchup.ActEventsCatchUp {
				t.Fatalf("asked visibility for %q", sc.asked)
			}
			if got := seqs(p.Events); len(got) != len(tt.want) || (len(got) > 0 && !equal(got, tt.want)) {
				t.Fatalf("seqs = %v, want %v", got, tt.want)
			}
			if p.NextAfter != tt.wantNext || p.HeadSeq != 8 {
				t.Fatalf("next_after = %d head = %d, want %d 8", p.NextAfter, p.HeadSeq, tt.wantNext)
			}
		})
	}

	t.Run("bounds the scan of a log the caller cannot see and still moves on", func(t *testing.T) {
		l := &fakeLog{}
		for i := 0; i < 5000; i++ {
			l.add(messaging.EvMessageCreated.Name, kernel.Scope{SpaceID: other, ChannelID: shut, ThreadID: shut})
		}
		sc := &fakeScoper{}
		svc := catchup.New(catchup.Deps{Log: l, Scoper: sc})
		p, err := svc.CatchUp(ctx, alice, 0, 20)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Events) != 0 || p.NextAfter != 200 || l.scanned != 200 || p.HeadSeq != 5000 {
			t.Fatalf("events %d next_after %d scanned %d head %d", len(p.Events), p.NextAfter, l.scanned, p.HeadSeq)
		}
		p, err = svc.CatchUp(ctx, alice, p.NextAfter, 0)
		if err != nil || p.NextAfter != 1200 {
			t.Fatalf("second page: next_after %d, %v", p.NextAfter, err)
		}
	})
	t.Run("finds a visible event far behind invisible ones within the bound", func(t *testing.T) {
		l := &fakeLog{}
		for i := 0; i < 150; i++ {
			l.add(messaging.EvMessageCreated.Name, kernel.Scope{SpaceID: other, ChannelID: shut})
		}
		l.add(messaging.EvMessageCreated.Name, kernel.Scope{SpaceID: space, ChannelID: open})
		p, err := catchup.New(catchup.Deps{Log: l, Scoper: &fakeScoper{channels: map[kernel.ID]bool{open: true}}}).CatchUp(ctx, alice, 0, 50)
		if err != nil || !equal(seqs(p.Events), []int64{151}) || p.NextAfter != 151 {
			t.Fatalf("page %+v, %v", p, err)
		}
	})
}

func TestCatchUpBehindRetention(t *testing.T) {
	ctx := context.Background()
	l := &fakeLog{}
	for range 10 {
		l.add(messaging.EvMessageCreated.Name, kernel.Scope{SpaceID: space, ChannelID: open})
	}
	l.prune(6) // the oldest kept is 7
	svc := catchup.New(catchup.Deps{Log: l, Scoper: &fakeScoper{channels: map[kernel.ID]bool{open: true}}})
	for _, after := range []int64{0, 5} {
		_, err := svc.CatchUp(ctx, alice, after, 0)
		var re *catchup.ResyncRequired
		if !errors.As(err, &re) || kernel.CodeOf(err) != catchup.CodeResyncRequired {
			t.Fatalf("after %d: err = %v, want resync_required", after, err)
		}
		if re.HeadSeq != 10 || re.OldestSeq != 7 {
			t.Fatalf("after %d: head %d oldest %d, want 10 and 7", after, re.HeadSeq, re.OldestSeq)
		}
		if e := (*kernel.Error)(nil); !errors.As(err, &e) || e.Field != "after" || !strings.Contains(e.Message, "10") {
			t.Fatalf("after %d: the error %v does not name the cursor and the head", after, err)
		}
	}
	// The seq just before the oldest kept one loses nothing.
	for _, after := range []int64{6, 9, 10} {
		p, err := svc.CatchUp(ctx, alice, after, 0)
		if err != nil || int64(len(p.Events)) != 10-after {
			t.Fatalf("after %d: %d events, %v", after, len(p.Events), err)
		}
	}
	// Retention that passes the cursor while the page is read refuses the page.
	racing := &pruningLog{fakeLog: l, pruneTo: 8}
	if _, err := catchup.New(catchup.Deps{Log: racing, Scoper: &fakeScoper{channels: map[kernel.ID]bool{open: true}}}).
		CatchUp(ctx, alice, 7, 0); kernel.CodeOf(err) != catchup.CodeResyncRequired {
		t.Fatalf("a prune during the read: err = %v, want resync_required", err)
	}
}

// pruningLog prunes up to pruneTo right after it answers a read: retention running meanwhile.
type pruningLog struct {
	*fakeLog
	pruneTo int64
}

func (l *pruningLog) EventsAfter(ctx context.Context, after int64, limit int) ([]kernel.LoggedEvent, error) {
	evs, err := l.fakeLog.EventsAfter(ctx, after, limit)
	l.prune(l.pruneTo)
	return evs, err
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
