package tests

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
)

// engine is a storage engine the server runs on. Every end-to-end test runs on each of them:
// SQLite always, PostgreSQL when postgresURLEnv points to a cluster.
type engine string

const (
	sqliteEngine   engine = "sqlite"
	postgresEngine engine = "postgres"
)

// postgresURLEnv names the superuser URL of a PostgreSQL cluster on which the tests may create
// and drop databases (CI sets it, see .ci/pg).
const postgresURLEnv = "BOTHY_TEST_POSTGRES_URL"

// dbURLEnv is the variable that carries a server's database URL to the process; the server
// reads it through database.url_ref=env:DATABASE_URL. It has no BOTHY_ prefix, which is kept for
// configuration keys.
const dbURLEnv = "DATABASE_URL"

// onEachEngine runs body once per engine, as the subtests "sqlite" and "postgres". The
// PostgreSQL half is skipped, and only it, when postgresURLEnv is unset. parallel runs the
// halves side by side.
func onEachEngine(t *testing.T, parallel bool, body func(t *testing.T, eng engine)) {
	t.Helper()
	for _, eng := range []engine{sqliteEngine, postgresEngine} {
		t.Run(string(eng), func(t *testing.T) {
			if parallel {
				t.Parallel()
			}
			if eng == postgresEngine {
				postgresClusterURL(t)
			}
			body(t, eng)
		})
	}
}

// postgresClusterURL returns the cluster's URL or skips the test when none is given.
func postgresClusterURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(postgresURLEnv)
	if u == "" {
		tb.Skip(postgresURLEnv + " is not set: the PostgreSQL half of this test does not run")
	}
	return u
}

var (
	pgAdminOnce sync.Once
	pgAdmin     *sql.DB
	pgAdminErr  error
)

// mustPostgresAdmin is the test binary's pool to the cluster's own database, for CREATE and DROP
// DATABASE; shared by all tests and never closed.
func mustPostgresAdmin(tb testing.TB) *sql.DB {
	tb.Helper()
	u := postgresClusterURL(tb)
	pgAdminOnce.Do(func() {
		db, err := sql.Open("pgx", u)
		if err != nil {
			pgAdminErr = err
			return
		}
		db.SetMaxOpenConns(4)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := db.PingContext(ctx); err != nil {
			db.Close()
			pgAdminErr = err
			return
		}
		pgAdmin = db
	})
	if pgAdminErr != nil {
		tb.Fatalf("cannot reach the PostgreSQL cluster of %s: %v", postgresURLEnv, pgAdminErr)
	}
	return pgAdmin
}

// mustPostgresDatabase creates an empty database with a random name on the cluster and drops it
// in tb.Cleanup (ending its sessions), and returns its URL. Register it before starting a
// server on it, so that the server has stopped when the database is dropped.
func mustPostgresDatabase(tb testing.TB) string {
	tb.Helper()
	admin := mustPostgresAdmin(tb)
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "bothy_e2e_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// template0 is never connected to, so concurrent creations do not wait for one another.
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE "`+name+`" TEMPLATE template0`); err != nil {
		tb.Fatalf("CREATE DATABASE %s: %v", name, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`); err != nil {
			tb.Errorf("DROP DATABASE %s: %v", name, err)
		}
	})
	u, err := url.Parse(postgresClusterURL(tb))
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		tb.Fatalf("%s must be a postgres:// URL (%v)", postgresURLEnv, err)
	}
	u.Path = "/" + name
	return u.String()
}

// postgresFlags put a command on the database whose URL is in dbURLEnv.
var postgresFlags = []string{"--set", "database.driver=postgres", "--set", "database.url_ref=env:" + dbURLEnv}

// envWithDatabase is the clean environment plus dbURLEnv set to dbURL (when not empty).
func envWithDatabase(dbURL string) []string {
	env := cleanEnv()
	if dbURL != "" {
		env = append(env, dbURLEnv+"="+dbURL)
	}
	return env
}

// cliResult is one finished run of a bothy command.
type cliResult struct {
	args           []string
	code           int
	stdout, stderr string
}

// runBothy runs the binary to its end with the environment env, within a minute.
func runBothy(tb testing.TB, env []string, args ...string) cliResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := cliResult{args: args, code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
	if err != nil && res.code < 0 {
		tb.Fatalf("bothy %s: %v\nstderr:\n%s", strings.Join(args, " "), err, res.stderr)
	}
	return res
}

var appliedLine = regexp.MustCompile(`^\d{4}_[a-z0-9_]+\tapplied$`)

// mustMigrateUp runs `bothy migrate up` on the PostgreSQL database of dbURL, as an operator
// does before the first start, and checks what it prints: one "<version>_<name>\tapplied" line
// per migration on stdout, and never the URL.
func mustMigrateUp(tb testing.TB, dbURL string) {
	tb.Helper()
	res := runBothy(tb, envWithDatabase(dbURL), append([]string{"migrate", "up"}, postgresFlags...)...)
	if res.code != 0 {
		tb.Fatalf("bothy migrate up exited with %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(res.stdout, "\n"), "\n")
	for _, l := range lines {
		if !appliedLine.MatchString(l) {
			tb.Fatalf("bothy migrate up on an empty database printed %q, want only <version>_<name>\\tapplied lines", res.stdout)
		}
	}
	if leaksURL(res.stdout + res.stderr) {
		tb.Errorf("bothy migrate up printed the database URL:\n%s%s", res.stdout, res.stderr)
	}
}

// leaksURL reports whether output shows a PostgreSQL URL, which is a secret.
func leaksURL(output string) bool {
	return strings.Contains(output, "postgres://") || strings.Contains(output, "postgresql://")
}

// mustOpenPostgres opens a pool of the test binary to the server's database, for checks that
// the API cannot make; closed in tb.Cleanup (before the database is dropped).
func (s *server) mustOpenPostgres(tb testing.TB) *sql.DB {
	tb.Helper()
	if s.eng != postgresEngine {
		tb.Fatalf("the server runs on %s, not PostgreSQL", s.eng)
	}
	db, err := sql.Open("pgx", s.dbURL)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}
