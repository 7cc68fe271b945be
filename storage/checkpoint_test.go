package storage_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/migrate"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/engine"
	"bothy.dev/bothy/storage/sqlite"
)

func TestWALStaysShortUnderSteadyWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bothy.db")
	w, r, err := sqlite.Open(ctx, sqlite.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.Up(ctx, w, engine.SQLite, nil); err != nil {
		t.Fatal(err)
	}
	db, err := storage.Open(ctx, sqlite.Dialect{}, w, r, storage.Options{CheckpointPages: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// One commit per write, each appending a frame or more: without checkpoints the WAL grows by
	// at least 4 KiB a commit (34 MB measured for these 2,000).
	for i := 0; i < 2000; i++ {
		if err := db.Do(ctx, func(ctx context.Context) error {
			db.Append(ctx, kernel.Event{Type: "test", Payload: i})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 12<<20 {
		t.Fatalf("the WAL is %d bytes after 2,000 commits: it is not being checkpointed and restarted", fi.Size())
	}
}
