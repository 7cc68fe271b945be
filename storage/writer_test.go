package storage_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/migrate"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/sqlite"
	"bothy.dev/bothy/storage/storetest"
)

func TestUnitOfWork(t *testing.T) {
	t.Run("numbers events gaplessly in commit order under concurrent writers", func(t *testing.T) {
		db := storetest.Open(t, storage.Options{})
		ctx := context.Background()
		var wg sync.WaitGroup
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < 50; i++ {
					fail := i%7 == 3
					err := db.Do(ctx, func(ctx context.Context) error {
						db.Append(ctx, kernel.Event{Type: "test.one", Payload: map[string]int{"w": w, "i": i}})
						db.Append(ctx, kernel.Event{Type: "test.two", Payload: map[string]int{"w": w, "i": i}})
						if fail {
							return kernel.Errorf(kernel.CodeConflict, "vetoed")
						}
						return nil
					})
					if fail != (err != nil) {
						t.Errorf("w%d i%d: err = %v", w, i, err)
					}
				}
			}(w)
		}
		wg.Wait()
		evs, err := db.EventsAfter(ctx, 0, 10000)
		if err != nil {
			t.Fatal(err)
		}
		want := 16 * (50 - 7) * 2 // i%7==3 fails for i in {3,10,17,24,31,38,45}
		if len(evs) != want {
			t.Fatalf("got %d events, want %d", len(evs), want)
		}
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				t.Fatalf("event %d has seq %d", i, e.Seq)
			}
		}
		// The two events of one unit are adjacent: a unit's events are numbered together.
		for i := 0; i < len(evs); i += 2 {
			if evs[i].Type != "test.one" || evs[i+1].Type != "test.two" || string(evs[i].Payload) != string(evs[i+1].Payload) {
				t.Fatalf("events %d and %d are not one unit: %s %s", i, i+1, evs[i].Payload, evs[i+1].Payload)
			}
		}
		if db.Head() != int64(want) {
			t.Fatalf("head = %d, want %d", db.Head(), want)
		}
	})

	t.Run("rolls back a failed unit alone and keeps its neighbours", func(t *testing.T) {
		db := storetest.Open(t, storage.Options{})
		ctx := context.Background()
		errBoom := errors.New("boom")
		err := db.Do(ctx, func(ctx context.Context) error {
			db.Append(ctx, kernel.Event{Type: "test.lost"})
			return errBoom
		})
		if !errors.Is(err, errBoom) {
			t.Fatalf("err = %v", err)
		}
		if err := db.Do(ctx, func(ctx context.Context) error {
			db.Append(ctx, kernel.Event{Type: "test.kept"})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		evs, _ := db.EventsAfter(ctx, 0, 10)
		if len(evs) != 1 || evs[0].Type != "test.kept" || evs[0].Seq != 1 {
			t.Fatalf("events = %+v", evs)
		}
	})

	t.Run("turns a panic in a unit into an error", func(t *testing.T) {
		db := storetest.Open(t, storage.Options{})
		err := db.Do(context.Background(), func(ctx context.Context) error { panic("no") })
		if err == nil {
			t.Fatal("want error")
		}
	})

	t.Run("nested units join the outer one", func(t *testing.T) {
		db := storetest.Open(t, storage.Options{})
		ctx := context.Background()
		err := db.Do(ctx, func(ctx context.Context) error {
			db.Append(ctx, kernel.Event{Type: "outer"})
			return db.Do(ctx, func(ctx context.Context) error {
				db.Append(ctx, kernel.Event{Type: "inner"})
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		evs, _ := db.EventsAfter(ctx, 0, 10)
		if len(evs) != 2 {
			t.Fatalf("events = %+v", evs)
		}
	})
}

func TestTwoWritersOnOneFile(t *testing.T) {
	// bothy setup bootstrap-owner may write while a server runs on the same data dir: the
	// second writer's events must continue the sequence, not repeat it.
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bothy.db")
	open := func() *storage.DB {
		w, r, err := sqlite.Open(ctx, sqlite.Options{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := migrate.Up(ctx, w, "sqlite", nil); err != nil {
			t.Fatal(err)
		}
		db, err := storage.Open(ctx, sqlite.Dialect{}, w, r, storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	a, b := open(), open()
	for i, db := range []*storage.DB{a, b, a, b, a} {
		if err := db.Do(ctx, func(ctx context.Context) error {
			db.Append(ctx, kernel.Event{Type: "test", Payload: i})
			return nil
		}); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	evs, err := a.EventsAfter(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 5 {
		t.Fatalf("%d events", len(evs))
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) || string(e.Payload) != fmt.Sprint(i) {
			t.Fatalf("event %d: seq %d payload %s", i, e.Seq, e.Payload)
		}
	}
}
