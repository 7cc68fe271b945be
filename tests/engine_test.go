package tests

import (
	"bytes"
	"context"
	"database/sql"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"bothy.dev/bothy/storage/storetest/pgdb"
)

// engine is a storage engine the server runs on. Every end-to-end test runs on each of them:
// SQLite always, PostgreSQL when pgdb.EnvURL points to a cluster.
type engine string

const (
	sqliteEngine   engine = "sqlite"
	postgresEngine engine = "postgres"
)

// dbURLEnv is the variable that carries a server's database URL to the process; the server
// reads it through database.url_ref=env:DATABASE_URL. It has no BOTHY_ prefix, which is kept for
// configuration keys.
const dbURLEnv = "DATABASE_URL"

// onEachEngine runs body once per engine, as the subtests "sqlite" and "postgres". The
// PostgreSQL half is skipped, and only it, when pgdb.EnvURL is unset. parallel runs the
// halves side by side.
func onEachEngine(t *testing.T, parallel bool, body func(t *testing.T, eng engine)) {
	t.Helper()
	for _, eng := range []engine{sqliteEngine, postgresEngine} {
		t.Run(string(eng), func(t *testing.T) {
			if parallel {
				t.Parallel()
			}
			if eng == postgresEngine {
				pgdb.URL(t)
			}
			body(t, eng)
		})
	}
}

// mustPostgresDatabase creates an empty database with a random name on the cluster and drops it
// in tb.Cleanup (ending its sessions), and returns its URL. Register it before starting a
// server on it, so that the server has stopped when the database is dropped. It is a copy of
// template0, which is never connected to, so concurrent creations do not wait for one another.
func mustPostgresDatabase(tb testing.TB) string {
	tb.Helper()
	return pgdb.CreateNamed(tb, "bothy_e2e_", "template0")
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
