package authz

import (
	"strings"
	"testing"

	"bothy.dev/bothy/app/kernel"
)

func TestObservePayloadErrors(t *testing.T) {
	principal, channel := kernel.NewID(), kernel.NewID()

	t.Run("a grant.changed whose payload does not read is an error naming its seq and type, counted, and stops the cache", func(t *testing.T) {
		s := &Service{cache: &cache{m: newModel(1)}}
		err := s.cache.observe(kernel.LoggedEvent{Seq: 2, Type: EvGrantChanged.Name, Payload: []byte(`{"principal_id":7}`)})
		if err == nil || !strings.Contains(err.Error(), "seq 2") || !strings.Contains(err.Error(), "grant.changed") {
			t.Fatalf("err %v", err)
		}
		if n := s.PayloadErrors(); n != 1 {
			t.Fatalf("PayloadErrors = %d, want 1", n)
		}
		if !s.cache.stale || s.cache.m.seq != 1 {
			t.Fatalf("stale %v at seq %d", s.cache.stale, s.cache.m.seq)
		}
	})

	t.Run("events read through the views change the model", func(t *testing.T) {
		s := &Service{cache: &cache{m: newModel(1)}}
		p := principal
		if err := s.cache.observe(kernel.LoggedEvent{Seq: 2, Type: "user.created", SubjectID: p,
			Payload: []byte(`{"id":"` + string(p) + `","status":"active","is_owner":false}`)}); err != nil {
			t.Fatal(err)
		}
		if err := s.cache.observe(kernel.LoggedEvent{Seq: 3, Type: EvGrantChanged.Name,
			Payload: []byte(`{"channel_id":"` + string(channel) + `","principal_id":"` + string(p) + `","level":"view"}`)}); err != nil {
			t.Fatal(err)
		}
		if n := s.PayloadErrors(); n != 0 || s.cache.m.seq != 3 || !s.cache.m.principals[p].active {
			t.Fatalf("PayloadErrors %d, seq %d", n, s.cache.m.seq)
		}
	})

	t.Run("a gap in seq is not a payload error", func(t *testing.T) {
		s := &Service{cache: &cache{m: newModel(1)}}
		if err := s.cache.observe(kernel.LoggedEvent{Seq: 5, Type: EvGrantChanged.Name, Payload: []byte(`{}`)}); err == nil {
			t.Fatal("a gap was applied")
		}
		if n := s.PayloadErrors(); n != 0 {
			t.Fatalf("PayloadErrors = %d, want 0", n)
		}
	})
}
