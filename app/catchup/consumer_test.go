package catchup_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/kerneltest"
	"bothy.dev/bothy/app/messaging"
)

type fakeCursors struct {
	mu    sync.Mutex
	acked map[kernel.ID]int64
	// created is the seq before each agent's creation: where a cursor not stored yet starts.
	created map[kernel.ID]int64
}

func (f *fakeCursors) AckedSeq(_ context.Context, a kernel.ID) (int64, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.acked[a]; ok {
		return s, true, nil
	}
	return f.created[a], false, nil
}

func (f *fakeCursors) SaveAcks(_ context.Context, acks map[kernel.ID]int64, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for a, s := range acks {
		f.acked[a] = max(f.acked[a], s)
	}
	return nil
}

// fakeWaker closes its channel when the test says the head moved.
type fakeWaker struct {
	mu sync.Mutex
	ch chan struct{}
}

func (w *fakeWaker) Changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ch
}

func (w *fakeWaker) advance() {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.ch)
	w.ch = make(chan struct{})
}

func TestConsumer(t *testing.T) {
	ctx := context.Background()
	log := &fakeLog{}
	log.add(messaging.EvMessageCreated.Name, kernel.Scope{SpaceID: space, ChannelID: open})
	log.add(messaging.EvMessageCreated.Name, kernel.Scope{SpaceID: space, ChannelID: shut})
	cursors := &fakeCursors{acked: map[kernel.ID]int64{}, created: map[kernel.ID]int64{agent.ID: 0}}
	wake := &fakeWaker{ch: make(chan struct{})}
	az := &kerneltest.Authz{Fn: func(a kernel.Actor, act kernel.Action, _ kernel.Resource) error {
		if act != catchup.ActAgentConsume || a.Kind != kernel.KindAgent {
			return kernel.Errorf(kernel.CodeForbidden, "agents only")
		}
		return nil
	}}
	c := catchup.NewConsumer(catchup.ConsumerDeps{Service: catchup.New(catchup.Deps{Log: log, Scoper: &fakeScoper{channels: map[kernel.ID]bool{open: true}}}), Authz: az, Cursors: cursors, Wake: wake, Clock: kernel.NewManualClock(time.Now())})

	t.Run("a first poll without a cursor starts at the agent's creation, not at the head, and stores that cursor", func(t *testing.T) {
		p, err := c.Poll(ctx, agent, nil, 0, 0)
		if err != nil || len(p.Events) != 1 || p.Events[0].Seq != 1 || p.NextAfter != 2 {
			t.Fatalf("%+v %v, want the event it may see since its creation", p, err)
		}
		if s, ok, _ := cursors.AckedSeq(ctx, agent.ID); !ok || s != 0 {
			t.Fatalf("cursor %d (stored %v), want 0 stored", s, ok)
		}
		if p, _ := c.Poll(ctx, agent, nil, 0, 0); len(p.Events) != 1 || p.Events[0].Seq != 1 {
			t.Fatalf("before an ack the next poll gave %+v, want the same event again", p)
		}
		if err := c.Ack(ctx, agent, p.NextAfter); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a long poll returns when an event it may see comes", func(t *testing.T) {
		got := make(chan catchup.Page, 1)
		go func() {
			p, _ := c.Poll(ctx, agent, nil, 10*time.Second, 0)
			got <- p
		}()
		time.Sleep(20 * time.Millisecond)
		log.add(messaging.EvMessageCreated.Name, kernel.Scope{SpaceID: space, ChannelID: shut}) // not for it: it waits on
		wake.advance()
		time.Sleep(20 * time.Millisecond)
		log.add(messaging.EvMessageCreated.Name, kernel.Scope{SpaceID: space, ChannelID: open})
		wake.advance()
		select {
		case p := <-got:
			if len(p.Events) != 1 || p.Events[0].Seq != 4 || p.NextAfter != 4 {
				t.Fatalf("%+v", p)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the long poll did not return")
		}
	})
	t.Run("ack moves the cursor, not back, not beyond the head", func(t *testing.T) {
		if err := c.Ack(ctx, agent, 4); err != nil {
			t.Fatal(err)
		}
		if err := c.Ack(ctx, agent, 3); err != nil {
			t.Fatal(err)
		}
		if s, _, _ := cursors.AckedSeq(ctx, agent.ID); s != 4 {
			t.Fatalf("cursor %d, want 4", s)
		}
		if err := c.Ack(ctx, agent, 5); kernel.CodeOf(err) != kernel.CodeValidation {
			t.Fatalf("an ack beyond the head: %v", err)
		}
		if p, _ := c.Poll(ctx, agent, nil, 0, 0); len(p.Events) != 0 {
			t.Fatalf("after the ack: %+v", p)
		}
	})
	t.Run("only agents consume, and a wait is bounded", func(t *testing.T) {
		if _, err := c.Poll(ctx, alice, nil, 0, 0); kernel.CodeOf(err) != kernel.CodeForbidden {
			t.Fatalf("a person's poll: %v", err)
		}
		if err := c.Ack(ctx, alice, 1); kernel.CodeOf(err) != kernel.CodeForbidden {
			t.Fatalf("a person's ack: %v", err)
		}
		if _, err := c.Poll(ctx, agent, nil, time.Minute, 0); kernel.CodeOf(err) != kernel.CodeValidation {
			t.Fatalf("a wait of a minute: %v", err)
		}
	})
	t.Run("the preparer rewrites what the agent gets, or holds it back", func(t *testing.T) {
		prep := &fakePreparer{fn: func(a kernel.Actor, e kernel.LoggedEvent) ([]byte, bool, error) {
			if a.ID != agent.ID {
				t.Errorf("prepared for %s", a.ID)
			}
			return []byte(`{"prepared":true}`), e.Seq != 1, nil
		}}
		pc := catchup.NewConsumer(catchup.ConsumerDeps{Service: catchup.New(catchup.Deps{Log: log, Scoper: &fakeScoper{channels: map[kernel.ID]bool{open: true}}}), Authz: az, Cursors: cursors, Wake: wake, Clock: kernel.NewManualClock(time.Now()), Prepare: prep})
		zero := int64(0)
		p, err := pc.Poll(ctx, agent, &zero, 0, 0)
		if err != nil || len(p.Events) != 1 || p.Events[0].Seq != 4 || string(p.Events[0].Payload) != `{"prepared":true}` || p.NextAfter != 4 {
			t.Fatalf("%+v %v", p, err)
		}
	})
}

// fakePreparer answers with fn.
type fakePreparer struct {
	fn func(a kernel.Actor, e kernel.LoggedEvent) ([]byte, bool, error)
}

var _ catchup.Preparer = (*fakePreparer)(nil)

func (f *fakePreparer) Prepare(_ context.Context, a kernel.Actor, e kernel.LoggedEvent) ([]byte, bool, error) {
	return f.fn(a, e)
}

func (f *fakeCursors) SeeConsumers(context.Context, []kernel.ID, time.Time) error { return nil }
