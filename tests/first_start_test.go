package tests

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeBindsBeforeItTouchesTheData: a second `bothy serve` on a port already taken ends
// with exit code 1 and a message that says so, before it creates or migrates anything: on
// SQLite the data directory is not even created, and on PostgreSQL the port is named before
// the schema is read.
func TestServeBindsBeforeItTouchesTheData(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		for _, which := range []struct{ flag, key string }{
			{"--listen-addr", "server.listen_addr"},
			{"--internal-listen-addr", "server.internal_listen_addr"},
		} {
			t.Run("a taken "+which.key+" ends the start and changes nothing", func(t *testing.T) {
				taken, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				defer taken.Close()
				addrs := map[string]string{"--listen-addr": "127.0.0.1:0", "--internal-listen-addr": "127.0.0.1:0"}
				addrs[which.flag] = taken.Addr().String()
				dataDir := filepath.Join(t.TempDir(), "data")
				args := []string{"serve", "--data-dir", dataDir,
					"--listen-addr", addrs["--listen-addr"], "--internal-listen-addr", addrs["--internal-listen-addr"]}
				var dbURL string
				if eng == postgresEngine {
					// Not migrated: a serve that looked at the database first would complain about
					// the schema instead of the port.
					dbURL = mustPostgresDatabase(t)
					args = append(args, postgresFlags...)
				}
				res := runBothy(t, envWithDatabase(dbURL), args...)
				if res.code != 1 {
					t.Fatalf("serve on a taken port exited with %d, want 1\nstderr:\n%s", res.code, res.stderr)
				}
				if !strings.Contains(res.stderr, which.key) || !strings.Contains(res.stderr, "in use by another process") {
					t.Fatalf("the log does not say that %s is in use:\n%s", which.key, res.stderr)
				}
				if strings.Contains(res.stderr, "migration") || strings.Contains(res.stderr, "schema") {
					t.Fatalf("serve looked at the database before it found the port taken:\n%s", res.stderr)
				}
				if _, err := os.Stat(dataDir); err == nil {
					t.Fatal("serve created the data directory before it found the port taken")
				}
				if res.stdout != "" {
					t.Fatalf("serve printed %q on stdout", res.stdout)
				}
			})
		}
	})
}

// TestConfigTakesTheDataDirFlag: `bothy config check` and `print` take --data-dir like serve,
// migrate and setup, so a newcomer can check the command line they are about to run.
func TestConfigTakesTheDataDirFlag(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		dataDir := filepath.Join(t.TempDir(), "data")
		var extra []string
		var dbURL string
		if eng == postgresEngine {
			extra, dbURL = postgresFlags, "postgres://unused.invalid/bothy"
		}
		env := envWithDatabase(dbURL)
		if res := runBothy(t, env, append([]string{"config", "check", "--data-dir", dataDir}, extra...)...); res.code != 0 || res.stdout != "configuration ok\n" {
			t.Fatalf("config check --data-dir: exit %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
		}
		res := runBothy(t, env, append([]string{"config", "print", "--data-dir", dataDir}, extra...)...)
		if res.code != 0 || !strings.Contains(res.stdout, `data_dir: "`+dataDir+`"  # flag`) {
			t.Fatalf("config print --data-dir: exit %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
		}
		if _, err := os.Stat(dataDir); err == nil {
			t.Fatal("config check created the data directory")
		}
	})
}

// TestHelpHasNoStrayLineBreaks: the --help of every command reads as paragraphs. A line cut
// short in the middle of a paragraph (a short line followed by more of the same paragraph) is
// a stray line break; indented lines (lists, examples) and a paragraph's last line may be
// short. No engine is involved: --help reads no configuration.
func TestHelpHasNoStrayLineBreaks(t *testing.T) {
	t.Parallel()
	for _, cmd := range [][]string{{"serve"}, {"migrate"}, {"setup", "bootstrap-owner"}, {"config"}, {"agent", "echo"},
		{"healthcheck"}, {"version"}} {
		t.Run(strings.Join(cmd, " "), func(t *testing.T) {
			res := runBothy(t, cleanEnv(), append(cmd, "--help")...)
			if res.code != 0 {
				t.Fatalf("exit %d: %s", res.code, res.stderr)
			}
			text, _, _ := strings.Cut(res.stdout, "\nFlags:")
			lines := strings.Split(text, "\n")
			for i := 1; i+1 < len(lines); i++ { // line 0 is the usage line
				line, next := lines[i], lines[i+1]
				prose := func(l string) bool { return l != "" && !strings.HasPrefix(l, " ") }
				if prose(line) && prose(next) && len(line) < 60 && !strings.HasSuffix(line, ":") {
					t.Errorf("stray line break after %q (followed by %q)", line, next)
				}
			}
		})
	}
}
