package stats

import (
	"context"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/kerneltest"
)

type fakeStore struct {
	since time.Time
	n     int
	hours []HourCount
}

var _ Store = (*fakeStore)(nil)

func (f *fakeStore) Counts(context.Context) (Counts, error) {
	return Counts{People: 2, Messages: 7}, nil
}
func (f *fakeStore) Hourly(_ context.Context, first time.Time, n int) ([]HourCount, error) {
	f.since, f.n = first, n
	return f.hours, nil
}
func (f *fakeStore) DatabaseSize(context.Context) (Database, error) {
	return Database{Engine: "sqlite", Bytes: 4096, WAL: 8192}, nil
}

func TestOverview(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 34, 56, 0, time.UTC)
	first := time.Date(2026, 2, 28, 13, 0, 0, 0, time.UTC)
	owner := kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, IsOwner: true}

	t.Run("asks for the last 24 hours and fills every hour, oldest first", func(t *testing.T) {
		hours := make([]HourCount, Hours)
		hours[0], hours[5], hours[Hours-1] = HourCount{Messages: 3}, HourCount{Runs: 4}, HourCount{Messages: 1, Runs: 2}
		st := &fakeStore{hours: hours}
		az := &kerneltest.Authz{}
		ov, err := New(Deps{Store: st, Authz: az, Clock: kernel.NewManualClock(now)}).Overview(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		if !st.since.Equal(first) || st.n != Hours {
			t.Fatalf("asked for %d hours from %v, want %d from %v", st.n, st.since, Hours, first)
		}
		if len(ov.Hours) != Hours || !ov.Hours[0].Start.Equal(first) || !ov.Hours[Hours-1].Start.Equal(now.Truncate(time.Hour)) {
			t.Fatalf("hours %v … %v", ov.Hours[0].Start, ov.Hours[len(ov.Hours)-1].Start)
		}
		want := map[int]HourCount{0: {Messages: 3}, 5: {Runs: 4}, Hours - 1: {Messages: 1, Runs: 2}}
		for i, h := range ov.Hours {
			if h.HourCount != want[i] {
				t.Errorf("hour %d (%v): %+v, want %+v", i, h.Start, h.HourCount, want[i])
			}
		}
		if ov.Counts.People != 2 || ov.Database.WAL != 8192 || az.Last().Action != ActStatsRead {
			t.Fatalf("%+v, decided %+v", ov, az.Last())
		}
	})

	t.Run("a short answer leaves the remaining hours at zero", func(t *testing.T) {
		hs := Buckets(first, []HourCount{{Messages: 1}})
		if len(hs) != Hours || hs[0].Messages != 1 || hs[1] != (Hour{Start: first.Add(time.Hour)}) {
			t.Fatalf("%+v", hs[:2])
		}
	})

	t.Run("a refused actor reads nothing", func(t *testing.T) {
		st := &fakeStore{}
		az := &kerneltest.Authz{Fn: func(kernel.Actor, kernel.Action, kernel.Resource) error {
			return &kernel.Error{Code: kernel.CodeForbidden, Message: "not allowed"}
		}}
		if _, err := New(Deps{Store: st, Authz: az, Clock: kernel.NewManualClock(now)}).Overview(ctx, owner); kernel.CodeOf(err) != kernel.CodeForbidden || !st.since.IsZero() {
			t.Fatalf("%v, store asked since %v", err, st.since)
		}
	})
}
