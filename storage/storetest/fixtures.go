package storetest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/migrate"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/sqlite"
)

// The helpers below are for the domain modules' use-case tests, which run their services on a
// real store (Open) instead of fakes of its repositories.

// Log returns every event of db's log, in order.
func Log(tb testing.TB, db *storage.DB) []kernel.LoggedEvent {
	tb.Helper()
	return LogAfter(tb, db, 0)
}

// LogAfter returns the events of db's log after seq, in order: a test's own, after those of its
// fixture (whose seq is db.Head() once the fixture is made).
func LogAfter(tb testing.TB, db *storage.DB, seq int64) []kernel.LoggedEvent {
	tb.Helper()
	evs, err := db.EventsAfter(context.Background(), seq, 100000)
	if err != nil {
		tb.Fatal(err)
	}
	return evs
}

// Payload decodes a logged event's payload as a T.
func Payload[T any](tb testing.TB, e kernel.LoggedEvent) T {
	tb.Helper()
	var v T
	if err := json.Unmarshal(e.Payload, &v); err != nil {
		tb.Fatalf("storetest: payload of %s: %v", e.Type, err)
	}
	return v
}

// PayloadIs reports whether a logged event's payload is v, as the log writes it.
func PayloadIs(tb testing.TB, e kernel.LoggedEvent, v any) bool {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(e.Payload) == string(b)
}

// Principal inserts the principal of a (its id, kind, handle and IsOwner; active), for a test
// whose actors are fixed before its store exists. An actor without a handle gets one made of its
// id. It appends no event.
func Principal(tb testing.TB, db *storage.DB, a kernel.Actor) {
	tb.Helper()
	if a.Handle == "" {
		a.Handle = "p-" + string(a.ID)[len(a.ID)-12:]
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	u := identity.User{ID: a.ID, Kind: a.Kind, Handle: a.Handle, DisplayName: a.Handle, Status: identity.StatusActive,
		IsOwner: a.IsOwner, CreatedAt: now, UpdatedAt: now}
	store := storage.NewIdentityStore(db)
	if err := db.Do(context.Background(), func(ctx context.Context) error {
		return store.CreatePrincipal(ctx, u, identity.HandleKey(a.Handle))
	}); err != nil {
		tb.Fatalf("storetest: principal %s: %v", a.Handle, err)
	}
}

// Agent inserts an agent: its principal (as Principal does, of kind agent), its agents row made by
// by, and, unless active, disables it. It appends no event.
func Agent(tb testing.TB, db *storage.DB, id, by kernel.ID, active bool) {
	tb.Helper()
	Principal(tb, db, kernel.Actor{ID: id, Kind: kernel.KindAgent})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	err := db.Do(context.Background(), func(ctx context.Context) error {
		if err := storage.NewAgentStore(db).CreateAgent(ctx, agents.Agent{ID: id, CreatedBy: by, CreatedAt: now}); err != nil || active {
			return err
		}
		return storage.NewIdentityStore(db).DisablePrincipal(ctx, id, now)
	})
	if err != nil {
		tb.Fatalf("storetest: agent %s: %v", id, err)
	}
}

// InUnit reports whether ctx carries a Unit of Work of db, for a subscriber or a fake of a port
// that must run inside one.
func InUnit(ctx context.Context, db *storage.DB) (in bool) {
	defer func() { in = recover() == nil }()
	db.AfterCommit(ctx, func() {})
	return true
}

var (
	sqliteOnce sync.Once
	sqliteFile []byte
	sqliteErr  error
)

// migratedSQLite returns a fresh SQLite file in tb.TempDir() that holds the migrated schema: a
// copy of one migrated once per test binary, so that a package whose every test opens a store of
// its own does not run the migrations each time (OpenAt then finds nothing to do).
func migratedSQLite(tb testing.TB) string {
	tb.Helper()
	sqliteOnce.Do(func() { sqliteFile, sqliteErr = migrateSQLite() })
	if sqliteErr != nil {
		tb.Fatalf("storetest: migrated SQLite file: %v", sqliteErr)
	}
	path := filepath.Join(tb.TempDir(), "bothy.db")
	if err := os.WriteFile(path, sqliteFile, 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

func migrateSQLite() ([]byte, error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "bothy-storetest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "bothy.db")
	w, r, err := sqlite.Open(ctx, sqlite.Options{Path: path})
	if err != nil {
		return nil, err
	}
	_, err = migrate.Up(ctx, w, "sqlite", nil)
	if err == nil { // fold the WAL into the file, which is then all there is to copy
		_, err = w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	}
	r.Close()
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}
