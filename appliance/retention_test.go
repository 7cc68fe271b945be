package appliance

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

func TestRetentionJob(t *testing.T) {
	storetest.Run(t, func(t *testing.T, e storetest.Engine) {
		ctx := context.Background()
		clock := kernel.NewManualClock(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
		db := e.Open(t, storage.Options{Clock: clock})
		appendEvents := func(n int) {
			t.Helper()
			for range n {
				if err := db.Do(ctx, func(ctx context.Context) error {
					db.Append(ctx, kernel.Event{Type: "test.retention", Payload: map[string]any{}})
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
		}
		appendEvents(7)
		clock.Advance(48 * time.Hour)
		appendEvents(2)
		head := db.Head()

		var logged bytes.Buffer
		job := retentionJob(db, clock, retentionSettings{Events: 24 * time.Hour, BatchSize: 3}, nil,
			slog.New(slog.NewTextHandler(&logged, nil)))
		if err := job(ctx, nil); err != nil {
			t.Fatal(err)
		}
		// Seven old events in batches of three: 3, 3, 1; the young ones stay.
		if after, err := db.RetainedAfter(ctx); err != nil || after != head-2 {
			t.Fatalf("retained after %d (%v), want %d", after, err, head-2)
		}
		if !strings.Contains(logged.String(), "removed=7") {
			t.Fatalf("the job logged %q, want the seven events it removed", logged.String())
		}
		// Nothing is old enough for the other kinds' retention, which is not set: a run again
		// changes nothing.
		if err := job(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if evs := storetest.LogAfter(t, db, 0); len(evs) != 2 || evs[1].Seq != head {
			t.Fatalf("kept %+v", evs)
		}
	})
}

func TestRetentionIsRegisteredOnlyWhenSet(t *testing.T) {
	if (retentionSettings{Interval: time.Hour, BatchSize: 10}).set() {
		t.Fatal("no retention set, but the job would run")
	}
	for _, s := range []retentionSettings{{Events: time.Hour}, {Revisions: time.Hour}, {RunOutput: time.Hour}, {Messages: time.Hour}} {
		if !s.set() {
			t.Fatalf("%+v: the job would not run", s)
		}
	}
}
