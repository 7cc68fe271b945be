package instance

import (
	"context"
	"errors"
	"strings"
	"testing"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/kerneltest"
)

// fakeStore keeps the settings in memory; SetName refuses to run outside a Unit of Work, as the
// store's writes must not.
type fakeStore struct {
	t    *testing.T
	s    Settings
	sets int
}

var _ Store = (*fakeStore)(nil)

func (f *fakeStore) Settings(context.Context) (Settings, error) { return f.s, nil }

func (f *fakeStore) SetName(ctx context.Context, name string) error {
	if !kerneltest.InUnit(ctx) {
		f.t.Fatal("SetName outside a unit of work")
	}
	f.sets++
	f.s.Name = name
	return nil
}

func (f *fakeStore) SetBroadcastMentions(ctx context.Context, v string) error {
	if !kerneltest.InUnit(ctx) {
		f.t.Fatal("SetBroadcastMentions outside a unit of work")
	}
	f.sets++
	f.s.BroadcastMentions = v
	return nil
}

func newEnv(t *testing.T) (*Service, *fakeStore, *kerneltest.Tx, *kerneltest.Authz) {
	st := &fakeStore{t: t, s: Settings{Name: DefaultName, BroadcastMentions: BroadcastPost}}
	tx := &kerneltest.Tx{}
	az := &kerneltest.Authz{Fn: func(actor kernel.Actor, action kernel.Action, _ kernel.Resource) error {
		switch {
		case action == ActDiscoveryRead:
			return nil
		case !actor.Authenticated():
			return &kernel.Error{Code: kernel.CodeUnauthenticated, Message: "authentication required"}
		case action == ActInstanceUpdate && !actor.IsOwner:
			return &kernel.Error{Code: kernel.CodeForbidden, Message: "not allowed"}
		}
		return nil
	}}
	return New(Deps{Store: st, UoW: tx, Events: tx, Authz: az}), st, tx, az
}

var (
	owner  = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, IsOwner: true}
	person = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson}
)

func TestRename(t *testing.T) {
	ctx := context.Background()

	t.Run("an owner renames the instance, trimmed, and instance.updated is appended", func(t *testing.T) {
		svc, st, tx, az := newEnv(t)
		got, err := svc.Rename(ctx, owner, "  Home hub  ")
		if err != nil || got.Name != "Home hub" || st.s.Name != "Home hub" {
			t.Fatalf("%+v %v, stored %q", got, err, st.s.Name)
		}
		evs := tx.Events()
		if len(evs) != 1 || evs[0].Type != EvUpdated.Name || evs[0].ActorID != owner.ID || evs[0].Payload.(Settings).Name != "Home hub" ||
			evs[0].Scope != (kernel.Scope{}) {
			t.Fatalf("events %+v", evs)
		}
		if az.Last().Action != ActInstanceUpdate {
			t.Fatalf("decided %+v", az.Last())
		}
	})

	t.Run("the same name again changes nothing and appends nothing", func(t *testing.T) {
		svc, st, tx, _ := newEnv(t)
		if _, err := svc.Rename(ctx, owner, DefaultName); err != nil || st.sets != 0 || len(tx.Events()) != 0 {
			t.Fatalf("%v, %d sets, %d events", err, st.sets, len(tx.Events()))
		}
	})

	t.Run("a person who is not an owner and the anonymous actor are refused", func(t *testing.T) {
		svc, st, _, _ := newEnv(t)
		if _, err := svc.Rename(ctx, person, "Mine"); kernel.CodeOf(err) != kernel.CodeForbidden {
			t.Fatal(err)
		}
		if _, err := svc.Rename(ctx, kernel.Anonymous, "Mine"); kernel.CodeOf(err) != kernel.CodeUnauthenticated {
			t.Fatal(err)
		}
		if st.s.Name != DefaultName {
			t.Fatalf("renamed to %q", st.s.Name)
		}
	})

	t.Run("refuses empty, long, control-laden, bidirectional, invisible and invalid names naming the field", func(t *testing.T) {
		svc, st, _, _ := newEnv(t)
		for _, n := range []string{"", "   ", strings.Repeat("ü", MaxNameLen+1), "a\nb", "bad\xff",
			"bothy\u202e", "\u2066bothy\u2069", "bo\u200bthy", "\u3164"} {
			_, err := svc.Rename(ctx, owner, n)
			if ke, ok := err.(*kernel.Error); !ok || ke.Code != kernel.CodeValidation || ke.Field != "name" {
				t.Errorf("%q: %v", n, err)
			}
		}
		if st.sets != 0 {
			t.Fatal("a refused name was stored")
		}
	})
}

func TestReadSettings(t *testing.T) {
	ctx := context.Background()
	svc, _, _, az := newEnv(t)
	if s, err := svc.Settings(ctx, person); err != nil || s.Name != DefaultName || az.Last().Action != ActInstanceRead {
		t.Fatalf("%+v %v", s, err)
	}
	if _, err := svc.Settings(ctx, kernel.Anonymous); kernel.CodeOf(err) != kernel.CodeUnauthenticated {
		t.Fatal(err)
	}
	if n, err := svc.Name(ctx); err != nil || n != DefaultName || az.Last().Action != ActDiscoveryRead {
		t.Fatalf("%q %v", n, err)
	}
}

func TestBroadcastMentionsSetting(t *testing.T) {
	ctx := context.Background()
	manage, bad := BroadcastManage, "everyone"
	t.Run("an owner lets only managers mention a whole channel, and instance.updated carries it", func(t *testing.T) {
		svc, st, tx, _ := newEnv(t)
		got, err := svc.Update(ctx, owner, Change{Name: DefaultName, BroadcastMentions: &manage})
		if err != nil || got.BroadcastMentions != BroadcastManage || st.s.BroadcastMentions != BroadcastManage {
			t.Fatalf("got %+v, %v", got, err)
		}
		evs := tx.Events()
		if len(evs) != 1 || evs[0].Payload != got {
			t.Fatalf("events %+v", evs)
		}
		if _, err := svc.Update(ctx, owner, Change{Name: DefaultName, BroadcastMentions: &manage}); err != nil || len(tx.Events()) != 1 {
			t.Fatalf("the same setting again appended: %v", err)
		}
	})
	t.Run("a setting that is neither post nor manage is refused and changes nothing", func(t *testing.T) {
		svc, st, tx, _ := newEnv(t)
		_, err := svc.Update(ctx, owner, Change{Name: DefaultName, BroadcastMentions: &bad})
		var e *kernel.Error
		if !kernel.IsCode(err, kernel.CodeValidation) || !errors.As(err, &e) || e.Field != "broadcast_mentions" || st.sets != 0 || len(tx.Events()) != 0 {
			t.Fatalf("err %v, sets %d", err, st.sets)
		}
	})
	t.Run("a person who is no owner may not change it", func(t *testing.T) {
		svc, st, _, _ := newEnv(t)
		if _, err := svc.Update(ctx, person, Change{Name: DefaultName, BroadcastMentions: &manage}); !kernel.IsCode(err, kernel.CodeForbidden) || st.sets != 0 {
			t.Fatalf("err %v", err)
		}
	})
}
