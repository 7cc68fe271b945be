package appliance

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"bothy.dev/bothy/storage/engine"
	"bothy.dev/bothy/storage/storetest/pgdb"
)

// mustPostgresRef creates a fresh, empty (unmigrated) database on the cluster of
// BOTHY_TEST_POSTGRES_URL, dropped when the test ends, and returns a file: reference to its URL
// (so tests can run side by side, unlike with environment variables). Without the variable the
// test is skipped.
func mustPostgresRef(tb testing.TB) string {
	tb.Helper()
	file := filepath.Join(tb.TempDir(), "database-url")
	if err := os.WriteFile(file, []byte(pgdb.Create(tb, "")+"\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	return "file:" + file
}

// pgArgs are the flags that put a command on the PostgreSQL database of ref.
func pgArgs(ref string) []string {
	return []string{"--set", "database.driver=postgres", "--set", "database.url_ref=" + ref}
}

// startServe runs serve with args until the test stops it; it returns once serve is ready.
func startServe(t *testing.T, args ...string) (c *testCLI, a *App, stop func() int) {
	t.Helper()
	c = newTestCLI()
	ready := make(chan *App, 1)
	c.onReady = func(a *App) { ready <- a }
	exit := make(chan int, 1)
	go func() {
		exit <- c.run(append([]string{"serve", "--listen-addr", "127.0.0.1:0", "--internal-listen-addr", "127.0.0.1:0"}, args...)...)
	}()
	select {
	case a = <-ready:
	case code := <-exit:
		t.Fatalf("serve exited with %d before it was ready: %s", code, c.stderr)
	case <-time.After(15 * time.Second):
		t.Fatalf("serve was not ready within 15s: %s", c.stderr)
	}
	stopped, result := false, 0
	stop = func() int {
		t.Helper()
		if stopped {
			return result
		}
		stopped = true
		c.sigs <- syscall.SIGTERM
		select {
		case result = <-exit:
		case <-time.After(20 * time.Second):
			t.Fatalf("serve did not stop within 20s: %s", c.stderr)
		}
		return result
	}
	t.Cleanup(func() { stop() })
	return c, a, stop
}

func runCLI(t *testing.T, stdin string, args ...string) (*testCLI, int) {
	t.Helper()
	c := newTestCLI()
	c.stdin = strings.NewReader(stdin)
	return c, c.run(args...)
}

func TestPostgresServeAndMigrate(t *testing.T) {
	ref := mustPostgresRef(t)
	pg := pgArgs(ref)

	t.Run("serve refuses an unmigrated database with 1, naming bothy migrate up", func(t *testing.T) {
		c, code := runCLI(t, "", append([]string{"serve", "--listen-addr", "127.0.0.1:0", "--internal-listen-addr", "127.0.0.1:0"}, pg...)...)
		if code != 1 || !strings.Contains(c.stderr.String(), "run `bothy migrate up`") {
			t.Fatalf("serve = %d, stderr:\n%s\nwant 1 naming bothy migrate up", code, c.stderr)
		}
		if strings.Contains(c.stderr.String(), "postgres://") {
			t.Fatalf("the log shows the database URL:\n%s", c.stderr)
		}
	})
	t.Run("migrate status lists every migration pending", func(t *testing.T) {
		c, code := runCLI(t, "", append([]string{"migrate", "status"}, pg...)...)
		if code != 0 || !regexp.MustCompile(`^0001_init\tpending\n`).MatchString(c.stdout.String()) {
			t.Fatalf("migrate status = %d, stdout %q, stderr %s", code, c.stdout, c.stderr)
		}
	})
	t.Run("migrate up applies them, and a second run applies nothing", func(t *testing.T) {
		c, code := runCLI(t, "", append([]string{"migrate", "up"}, pg...)...)
		if code != 0 || !strings.HasPrefix(c.stdout.String(), "0001_init\tapplied\n") {
			t.Fatalf("migrate up = %d, stdout %q, stderr %s", code, c.stdout, c.stderr)
		}
		c, code = runCLI(t, "", append([]string{"migrate", "up"}, pg...)...)
		if code != 0 || c.stdout.String() != "" {
			t.Fatalf("a second migrate up = %d, stdout %q, stderr %s", code, c.stdout, c.stderr)
		}
		c, code = runCLI(t, "", append([]string{"migrate", "status"}, pg...)...)
		if code != 0 || !regexp.MustCompile(`^0001_init\t\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n`).MatchString(c.stdout.String()) {
			t.Fatalf("migrate status = %d, stdout %q", code, c.stdout)
		}
	})

	dataDir := filepath.Join(t.TempDir(), "data")
	t.Run("serve starts, is ready, prints the setup link and stops with 0", func(t *testing.T) {
		c, a, stop := startServe(t, append([]string{"--data-dir", dataDir}, pg...)...)
		if code, body, _ := mustGet(t, "http://"+a.InternalAddr()+"/readyz"); code != 200 || body["status"] != "ready" {
			t.Errorf("/readyz = %d %v", code, body)
		}
		if !regexp.MustCompile(`^Open http://127\.0\.0\.1:\d+/console/setup\?code=\S+ to create the first owner\n$`).MatchString(c.stdout.String()) {
			t.Errorf("stdout = %q, want the setup line", c.stdout)
		}
		if a.DB.Dialect().Name() != engine.Postgres {
			t.Errorf("the store runs on %s", a.DB.Dialect().Name())
		}
		if code := stop(); code != 0 {
			t.Fatalf("serve = %d after SIGTERM: %s", code, c.stderr)
		}
		if _, err := os.Stat(dataDir); err == nil {
			t.Error("serve on PostgreSQL created the SQLite data directory")
		}
	})
	t.Run("a running server learns of commits made by another process", func(t *testing.T) {
		_, a, _ := startServe(t, pg...)
		before := a.DB.Head()
		c, code := runCLI(t, "correct horse battery staple\n", append([]string{"setup", "bootstrap-owner", "--handle", "ada", "--password-file", "-"}, pg...)...)
		if code != 0 {
			t.Fatalf("bootstrap-owner = %d: %s", code, c.stderr)
		}
		deadline := time.Now().Add(5 * time.Second)
		for a.DB.Head() <= before {
			if time.Now().After(deadline) {
				t.Fatalf("the server's head stayed at %d for 5 s after another process committed", before)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	t.Run("bootstrap-owner exits 3 once setup is complete", func(t *testing.T) {
		c, code := runCLI(t, "another password here\n", append([]string{"setup", "bootstrap-owner", "--handle", "bob", "--password-file", "-"}, pg...)...)
		if code != 3 {
			t.Fatalf("bootstrap-owner = %d: %s", code, c.stderr)
		}
	})
}

func TestMigrateCopy(t *testing.T) {
	ref := mustPostgresRef(t)
	pg := pgArgs(ref)
	dataDir := filepath.Join(t.TempDir(), "data")

	// An instance on SQLite with an owner (rows in principals, credentials, the event log).
	c, code := runCLI(t, "correct horse battery staple\n", "setup", "bootstrap-owner", "--data-dir", dataDir, "--handle", "ada", "--password-file", "-")
	if code != 0 {
		t.Fatalf("bootstrap-owner on SQLite = %d: %s", code, c.stderr)
	}
	owner := strings.TrimSpace(c.stdout.String())

	t.Run("refuses a target that is not migrated, naming migrate up", func(t *testing.T) {
		c, code := runCLI(t, "", "migrate", "copy", "--data-dir", dataDir, "--to-url-ref", ref)
		if code != 1 || !strings.Contains(c.stderr.String(), "bothy migrate up --set database.driver=postgres --set database.url_ref="+ref) {
			t.Fatalf("migrate copy = %d, stderr:\n%s", code, c.stderr)
		}
	})
	if c, code := runCLI(t, "", append([]string{"migrate", "up"}, pg...)...); code != 0 {
		t.Fatalf("migrate up = %d: %s", code, c.stderr)
	}
	t.Run("copies the instance with a progress line per table and a result on stdout", func(t *testing.T) {
		c, code := runCLI(t, "", "migrate", "copy", "--data-dir", dataDir, "--to-url-ref", ref)
		if code != 0 {
			t.Fatalf("migrate copy = %d: %s", code, c.stderr)
		}
		if !regexp.MustCompile(`^copied\t\d+\thead\t[1-9]\d*\n$`).MatchString(c.stdout.String()) {
			t.Errorf("stdout = %q", c.stdout)
		}
		for _, table := range []string{"instance", "principals", "event_log", "idempotency_keys"} {
			if !regexp.MustCompile(`(?m)^copy: ` + table + ` +\d+ rows`).MatchString(c.stderr.String()) {
				t.Errorf("no progress line for %s in:\n%s", table, c.stderr)
			}
		}
	})
	t.Run("refuses to copy again, changing nothing", func(t *testing.T) {
		c, code := runCLI(t, "", "migrate", "copy", "--data-dir", dataDir, "--to-url-ref", ref)
		if code != 1 || !strings.Contains(c.stderr.String(), "refused, nothing was changed") || !strings.Contains(c.stderr.String(), "principals") {
			t.Fatalf("a second migrate copy = %d, stderr:\n%s", code, c.stderr)
		}
	})
	t.Run("the moved instance runs on PostgreSQL: setup is complete, the owner is there", func(t *testing.T) {
		c, code := runCLI(t, "another password here\n", append([]string{"setup", "bootstrap-owner", "--handle", "bob", "--password-file", "-"}, pg...)...)
		if code != 3 {
			t.Fatalf("bootstrap-owner after the move = %d: %s", code, c.stderr)
		}
		c, a, stop := startServe(t, pg...)
		if c.stdout.String() != "" {
			t.Errorf("serve after the move printed %q, want no setup line", c.stdout)
		}
		if a.DB.Head() == 0 {
			t.Error("the moved instance's head is 0")
		}
		evs, err := a.DB.EventsAfter(context.Background(), 0, 100)
		if err != nil || len(evs) == 0 || int64(len(evs)) != a.DB.Head() {
			t.Fatalf("events after the move: %d (head %d), %v", len(evs), a.DB.Head(), err)
		}
		found := false
		for _, e := range evs {
			found = found || e.ActorID.String() == owner || strings.Contains(string(e.Payload), owner)
		}
		if !found {
			t.Errorf("no event of the owner %s in the moved log", owner)
		}
		if code := stop(); code != 0 {
			t.Fatalf("serve = %d: %s", code, c.stderr)
		}
	})
}
