package appliance

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/appliance/config"
	"bothy.dev/bothy/storage/engine"
)

// mustKeys stores, through the store's writer, an Idempotency-Key answer older than the TTL
// ("old", two days) and a young one ("new", a minute).
func mustKeys(t *testing.T, a *App) {
	t.Helper()
	now := time.Now().UTC()
	err := a.DB.Do(context.Background(), func(ctx context.Context) error {
		for key, age := range map[string]time.Duration{"old": 48 * time.Hour, "new": time.Minute} {
			if _, err := a.DB.Exec(ctx, `INSERT INTO idempotency_keys (principal_id, idem_key, fingerprint, status_code, response_body, created_at)
				VALUES (?, ?, 'f', 201, '', ?)`, "p1", key, now.Add(-age).Format("2006-01-02T15:04:05.000000Z")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func hasKey(t *testing.T, a *App, key string) bool {
	t.Helper()
	_, ok, err := a.DB.LookupIdempotency(context.Background(), kernel.ID("p1"), key)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// waitUntilGone waits up to 10 s for the old answer to be deleted, checking inside the loop.
func waitUntilGone(t *testing.T, a *App) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for hasKey(t, a, "old") {
		if time.Now().After(deadline) {
			t.Fatal("the answer older than sync.idempotency_key_ttl is still there after 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !hasKey(t, a, "new") {
		t.Fatal("the cleanup deleted an answer younger than sync.idempotency_key_ttl")
	}
}

func TestJobsOnSQLite(t *testing.T) {
	t.Run("role all runs the jobs: the idempotency cleanup deletes old answers at the start and keeps new ones", func(t *testing.T) {
		a := mustNew(t, testConfig(t))
		if a.Jobs == nil || a.jobPool == nil {
			t.Fatal("role all has no job queue or no runner")
		}
		mustKeys(t, a)
		mustRun(t, a)
		waitUntilGone(t, a)
	})
}

func TestJobRolesOnPostgres(t *testing.T) {
	ref := mustPostgresRef(t)
	if c, code := runCLI(t, "", append([]string{"migrate", "up"}, pgArgs(ref)...)...); code != 0 {
		t.Fatalf("migrate up = %d: %s", code, c.stderr)
	}
	cfg := func(role string) config.Config {
		c := testConfig(t)
		c.Database.Driver, c.Database.URLRef, c.Server.Role = string(engine.Postgres), ref, role
		return c
	}

	t.Run("role api enqueues but runs no job", func(t *testing.T) {
		a := mustNew(t, cfg("api"))
		if a.Jobs == nil || a.jobPool != nil {
			t.Fatalf("role api: queue %v, runner pool %v; want a queue and no runner", a.Jobs != nil, a.jobPool != nil)
		}
		a.Jobs.Register("test.noop", func(context.Context, json.RawMessage) error { return nil })
		mustKeys(t, a)
		mustRun(t, a)
		if err := a.Jobs.Enqueue(context.Background(), kernel.Job{Name: "test.noop"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		if !hasKey(t, a, "old") {
			t.Fatal("a job ran in role api")
		}
		// The queue holds the job enqueued, and no schedule: no runner started.
		var n int64
		if err := a.DB.Do(context.Background(), func(ctx context.Context) error {
			res, err := a.DB.Exec(ctx, `DELETE FROM goqite`)
			if err == nil {
				n, err = res.RowsAffected()
			}
			return err
		}); err != nil || n != 1 {
			t.Fatalf("the queue held %d jobs (%v), want the one enqueued", n, err)
		}
	})
	t.Run("role worker serves only the internal listener and runs the jobs", func(t *testing.T) {
		var stdout bytes.Buffer
		a, err := New(context.Background(), cfg("worker"), testLogger(t), &stdout)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		mustRun(t, a)
		if a.PublicAddr() != "" {
			t.Errorf("a worker listens on %s", a.PublicAddr())
		}
		if code, body, _ := mustGet(t, "http://"+a.InternalAddr()+"/readyz"); code != 200 || body["status"] != "ready" {
			t.Errorf("/readyz = %d %v", code, body)
		}
		if stdout.Len() != 0 {
			t.Errorf("a worker printed %q: the setup link belongs to the processes with a public listener", stdout.String())
		}
		waitUntilGone(t, a) // the api test above left the old answer
	})
}
