package appliance

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel/kerneltest"
	"bothy.dev/bothy/migrate"
	"bothy.dev/bothy/storage/engine"
)

// testCLI is one invocation of the command line with its own environment, input and signals.
type testCLI struct {
	*cli
	stdout, stderr *kerneltest.Buffer
	sigs           chan os.Signal
}

func newTestCLI(env ...string) *testCLI {
	t := &testCLI{stdout: &kerneltest.Buffer{}, stderr: &kerneltest.Buffer{}, sigs: make(chan os.Signal, 4)}
	t.cli = &cli{
		stdin:   strings.NewReader(""),
		stdout:  t.stdout,
		stderr:  t.stderr,
		env:     env,
		signals: func() (<-chan os.Signal, func()) { return t.sigs, func() {} },
	}
	return t
}

func (t *testCLI) run(args ...string) int { return t.cli.run(context.Background(), args) }

// A value that must never be echoed in an error.
const secretValue = "s3cr3t-VALUE"

func TestExitCodes(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	health := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			w.WriteHeader(http.StatusOK)
		case "/redirect":
			http.Redirect(w, r, "http://example.com/", http.StatusFound)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer health.Close()
	closed := closedPort(t)

	tests := []struct {
		name string
		args []string
		env  []string
		want int
		// stdout and stderr must match these patterns, if given.
		stdout, stderr string
	}{
		{name: "no command is a usage error", want: 2, stderr: `Usage: bothy <command>`},
		{name: "help goes to stdout", args: []string{"--help"}, want: 0, stdout: `(?s)serve.*migrate.*setup.*config.*healthcheck.*version`},
		{name: "an unknown command is a usage error", args: []string{"frobnicate"}, want: 2, stderr: `unknown command "frobnicate"`},
		{name: "version prints the version and Go's", args: []string{"version"}, want: 0, stdout: `^bothy dev go1\.\d+`},
		{name: "serve --help goes to stdout", args: []string{"serve", "--help"}, want: 0, stdout: `(?s)Usage: bothy serve.*Exit codes.*--data-dir`},
		{name: "migrate --help goes to stdout", args: []string{"migrate", "--help"}, want: 0, stdout: `Usage: bothy migrate up\|status`},
		{name: "migrate up --help goes to stdout", args: []string{"migrate", "up", "-h"}, want: 0, stdout: `Usage: bothy migrate`},
		{name: "setup --help goes to stdout", args: []string{"setup", "bootstrap-owner", "--help"}, want: 0, stdout: `(?s)--handle.*--password-file.*3 the setup is already complete`},
		{name: "config --help goes to stdout", args: []string{"config", "--help"}, want: 0, stdout: `Usage: bothy config check\|print`},
		{name: "healthcheck --help goes to stdout", args: []string{"healthcheck", "--help"}, want: 0, stdout: `(?s)--url.*--timeout`},
		{name: "version --help goes to stdout", args: []string{"version", "--help"}, want: 0, stdout: `Usage: bothy version`},
		{name: "an unknown flag is a usage error", args: []string{"serve", "--port", "1"}, want: 2, stderr: `flag provided but not defined: -port`},
		{name: "a stray argument is a usage error", args: []string{"serve", "now"}, want: 2, stderr: `unexpected argument "now"`},
		{name: "version refuses a stray argument", args: []string{"version", "now"}, want: 2, stderr: `^bothy version: unexpected argument "now"`},
		{name: "healthcheck refuses a stray argument", args: []string{"healthcheck", "--url", health.URL + "/healthz", "now"}, want: 2, stderr: `^bothy healthcheck: unexpected argument "now"`},
		{name: "agent echo refuses a stray argument", args: []string{"agent", "echo", "now"}, want: 2, stderr: `^bothy agent echo: unexpected argument "now"`},
		{name: "a subcommand refuses a stray argument after it", args: []string{"config", "check", "now"}, want: 2, stderr: `^bothy config check: unexpected argument "now"`},
		{name: "migrate status refuses a stray argument", args: []string{"migrate", "status", "now"}, want: 2, stderr: `^bothy migrate status: unexpected argument "now"`},
		{name: "setup bootstrap-owner refuses a stray argument", args: []string{"setup", "bootstrap-owner", "now"}, want: 2, stderr: `^bothy setup bootstrap-owner: unexpected argument "now"`},
		{name: "an unknown subcommand is a usage error that names the subcommands", args: []string{"config", "frobnicate"}, want: 2,
			stderr: `^bothy config: unknown subcommand "frobnicate": want check or print\n`},
		{name: "--set without = is a usage error", args: []string{"config", "check", "--set", "log.level"}, want: 2, stderr: `key=value`},

		{name: "serve refuses an unknown BOTHY_ variable, naming it", args: []string{"serve"}, env: []string{"BOTHY_SERVER__DATADIR=" + secretValue},
			want: 2, stderr: `BOTHY_SERVER__DATADIR.*unknown variable`},
		{name: "serve refuses a bad value, naming the key", args: []string{"serve", "--listen-addr", secretValue}, want: 2, stderr: `server.listen_addr \(flag --listen-addr\)`},
		{name: "serve on postgres requires database.url_ref", args: []string{"serve", "--set", "database.driver=postgres"}, want: 2, stderr: `database.url_ref \(default\): is required with database.driver postgres`},
		{name: "serve on postgres refuses a URL where its reference belongs", args: []string{"serve", "--set", "database.driver=postgres", "--set", "database.url_ref=postgres://u:" + secretValue + "@db/bothy"},
			want: 2, stderr: `database.url_ref \(flag --set\): must be a reference env:NAME or file:PATH`},
		{name: "serve on postgres ends with 1 when the reference does not resolve, naming it", args: []string{"serve", "--set", "database.driver=postgres", "--set", "database.url_ref=env:BOTHY_TEST_SURELY_UNSET"},
			want: 1, stderr: `env:BOTHY_TEST_SURELY_UNSET: env_unset`},
		{name: "serve --help explains the roles and several nodes", args: []string{"serve", "--help"}, want: 0,
			stdout: `(?s)Roles \(server.role, --role\).*worker the background jobs.*no public listener.*cluster.mode multi.*4006.*--role role\n\s+process role: all, or api or worker on PostgreSQL`},
		{name: "serve refuses the worker role on SQLite", args: []string{"serve", "--role=worker"}, want: 2,
			stderr: `server.role \(flag --role\): worker needs database.driver postgres`},
		{name: "serve takes --role worker on PostgreSQL, as far as the configuration goes", args: []string{"serve", "--role", "worker",
			"--set", "database.driver=postgres", "--set", "database.url_ref=env:BOTHY_TEST_SURELY_UNSET"},
			want: 1, stderr: `env:BOTHY_TEST_SURELY_UNSET: env_unset`},
		{name: "serve refuses the api role on SQLite", args: []string{"serve", "--role", "api"}, want: 2,
			stderr: `server.role \(flag --role\): api needs database.driver postgres`},
		{name: "serve takes --role api on PostgreSQL, as far as the configuration goes", args: []string{"serve", "--role", "api",
			"--set", "database.driver=postgres", "--set", "database.url_ref=env:BOTHY_TEST_SURELY_UNSET"},
			want: 1, stderr: `env:BOTHY_TEST_SURELY_UNSET: env_unset`},
		{name: "serve refuses several nodes on SQLite", args: []string{"serve", "--set", "cluster.mode=multi"}, want: 2,
			stderr: `cluster.mode \(flag --set\): multi needs database.driver postgres`},
		{name: "serve refuses a missing config file", args: []string{"serve", "--config", "/nonexistent/bothy.yaml"}, want: 2, stderr: `/nonexistent/bothy.yaml`},
		{name: "config check accepts the defaults", args: []string{"config", "check"}, want: 0, stdout: `^configuration ok\n$`},
		{name: "config check ignores test harness variables", args: []string{"config", "check"}, env: []string{"BOTHY_TEST_ANYTHING=1", "HOME=/root"}, want: 0},
		{name: "config check names every problem", args: []string{"config", "check"}, env: []string{"BOTHY_NOPE=1", "BOTHY_LOG__FORMAT=xml"},
			want: 2, stderr: `(?s)BOTHY_NOPE.*unknown variable`},
		{name: "config check warns about secrets in the environment", args: []string{"config", "check", "--set", "database.url_ref=env:DB_URL"},
			want: 0, stderr: `database.url_ref reads its secret from the environment`},
		{name: "config check --secrets names an unresolvable reference", args: []string{"config", "check", "--secrets", "--set", "database.url_ref=env:BOTHY_TEST_SURELY_UNSET"},
			want: 1, stdout: `secret database.url_ref: env_unset`},
		{name: "config print shows values with their source", args: []string{"config", "print", "--set", "log.level=debug"}, env: []string{"BOTHY_SERVER__DATA_DIR=/srv/bothy"},
			want: 0, stdout: `(?s)server.data_dir: "/srv/bothy"  # env.*log.level: "debug"  # flag.*shutdown.total_timeout: "30s"  # default`},
		{name: "config check refuses several nodes on SQLite", args: []string{"config", "check"}, env: []string{"BOTHY_CLUSTER__MODE=multi"},
			want: 2, stderr: `cluster.mode \(env BOTHY_CLUSTER__MODE\): multi needs database.driver postgres: several nodes share one PostgreSQL database`},
		{name: "config check takes two api nodes on PostgreSQL", args: []string{"config", "check", "--set", "server.role=api", "--set", "cluster.mode=multi",
			"--set", "database.driver=postgres", "--set", "database.url_ref=file:/run/secrets/db"}, want: 0, stdout: `configuration ok`},
		{name: "config print shows the cluster keys", args: []string{"config", "print", "--set", "cluster.mode=multi", "--set", "database.driver=postgres",
			"--set", "database.url_ref=file:/run/secrets/db"},
			want: 0, stdout: `(?s)server.role: "all"  # default\ncluster.mode: "multi"  # flag\ncluster.presence_flush_interval: "2s"  # default\ncluster.presence_ttl: "10s"  # default\n`},
		{name: "config check takes --data-dir like the other commands", args: []string{"config", "check", "--data-dir", "/srv/bothy"}, want: 0, stdout: `^configuration ok\n$`},
		{name: "config print takes --data-dir and names it as a flag", args: []string{"config", "print", "--data-dir", "/srv/bothy"},
			want: 0, stdout: `server.data_dir: "/srv/bothy"  # flag`},
		{name: "config with no subcommand is a usage error", args: []string{"config"}, want: 2, stderr: `missing subcommand`},

		{name: "healthcheck passes on 2xx", args: []string{"healthcheck", "--url", health.URL + "/healthz"}, want: 0},
		{name: "healthcheck fails on 503, naming the status", args: []string{"healthcheck", "--url", health.URL + "/readyz"}, want: 1, stderr: `^healthcheck: status 503\n$`},
		{name: "healthcheck does not follow a redirect", args: []string{"healthcheck", "--url", health.URL + "/redirect"}, want: 1, stderr: `status 302`},
		{name: "healthcheck fails when nothing listens", args: []string{"healthcheck", "--url", "http://" + closed + "/healthz"}, want: 1, stderr: `^healthcheck: connection refused\n$`},
		{name: "healthcheck accepts localhost", args: []string{"healthcheck", "--url", "http://localhost:" + port(health.URL) + "/healthz"}, want: 0},
		{name: "healthcheck refuses a host that is not loopback", args: []string{"healthcheck", "--url", "http://192.0.2.1:8081/healthz"}, want: 2, stderr: `loopback`},
		{name: "healthcheck refuses https", args: []string{"healthcheck", "--url", "https://127.0.0.1:8081/healthz"}, want: 2, stderr: `http://`},
		{name: "healthcheck refuses a name that only starts like localhost", args: []string{"healthcheck", "--url", "http://localhost.example.com/healthz"}, want: 2},
		{name: "healthcheck requires --url", args: []string{"healthcheck"}, want: 2, stderr: `--url is required`},
		{name: "healthcheck refuses a bad timeout", args: []string{"healthcheck", "--url", health.URL, "--timeout", "soon"}, want: 2},

		{name: "migrate without a subcommand is a usage error", args: []string{"migrate"}, want: 2, stderr: `missing subcommand: up, status or copy\n`},
		{name: "migrate down does not exist", args: []string{"migrate", "down"}, want: 2, stderr: `unknown subcommand "down": want up, status or copy\n`},
		{name: "migrate copy --help goes to stdout", args: []string{"migrate", "copy", "--help"}, want: 0, stdout: `(?s)Usage: bothy migrate up\|status\|copy.*--to-url-ref`},
		{name: "migrate copy needs a target", args: []string{"migrate", "copy", "--data-dir", dataDir}, want: 2, stderr: `--to-url-ref is required`},
		{name: "migrate copy refuses a URL where its reference belongs", args: []string{"migrate", "copy", "--data-dir", dataDir, "--to-url-ref", "postgres://u:" + secretValue + "@db/bothy"},
			want: 2, stderr: `--to-url-ref must be a reference env:NAME or file:PATH`},
		{name: "migrate copy refuses a reference to a BOTHY_ variable", args: []string{"migrate", "copy", "--data-dir", dataDir, "--to-url-ref", "env:BOTHY_DATABASE_URL"},
			want: 2, stderr: `without the BOTHY_ prefix`},
		{name: "migrate copy ends with 1 without a source, creating nothing", args: []string{"migrate", "copy", "--data-dir", dataDir, "--to-url-ref", "env:DATABASE_URL"},
			want: 1, stderr: `cannot open the source \(server.data_dir\)`},
		{name: "migrate up on postgres ends with 1 when the reference does not resolve", args: []string{"migrate", "up", "--set", "database.driver=postgres", "--set", "database.url_ref=file:/nonexistent/db-url"},
			want: 1, stderr: `file:/nonexistent/db-url: file_unreadable`},
		{name: "migrate status lists pending migrations without creating the database", args: []string{"migrate", "status", "--data-dir", dataDir},
			want: 0, stdout: `^0001_init\tpending\n`},

		{name: "setup without a subcommand is a usage error", args: []string{"setup"}, want: 2, stderr: `^bothy setup: missing subcommand: bootstrap-owner\n`},
		{name: "setup bootstrap-owner requires --handle", args: []string{"setup", "bootstrap-owner", "--password-file", "-"}, want: 2, stderr: `--handle is required`},
		{name: "setup bootstrap-owner requires --password-file", args: []string{"setup", "bootstrap-owner", "--handle", "ada"}, want: 2, stderr: `--password-file is required`},
		{name: "setup bootstrap-owner refuses an empty password", args: []string{"setup", "bootstrap-owner", "--handle", "ada", "--password-file", "-"}, want: 2, stderr: `password is empty`},
		{name: "setup bootstrap-owner refuses a missing password file", args: []string{"setup", "bootstrap-owner", "--handle", "ada", "--password-file", "/nonexistent/pw"}, want: 2, stderr: `cannot read`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestCLI(tt.env...)
			got := c.run(tt.args...)
			if got != tt.want {
				t.Errorf("exit code = %d, want %d\nstdout: %s\nstderr: %s", got, tt.want, c.stdout, c.stderr)
			}
			if tt.stdout != "" && !regexp.MustCompile(tt.stdout).MatchString(c.stdout.String()) {
				t.Errorf("stdout %q does not match %q", c.stdout, tt.stdout)
			}
			if tt.stderr != "" && !regexp.MustCompile(tt.stderr).MatchString(c.stderr.String()) {
				t.Errorf("stderr %q does not match %q", c.stderr, tt.stderr)
			}
			if strings.Contains(c.stdout.String()+c.stderr.String(), secretValue) {
				t.Errorf("the output repeats a configured value:\n%s\n%s", c.stdout, c.stderr)
			}
		})
	}
	if _, err := os.Stat(dataDir); err == nil {
		t.Error("migrate status created the data directory")
	}
}

func TestMigrateCommands(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	c := newTestCLI()
	if code := c.run("migrate", "up", "--data-dir", dataDir); code != 0 {
		t.Fatalf("migrate up = %d: %s", code, c.stderr)
	}
	// Every embedded migration, in order, each once: the list is the migrate package's own, so
	// that a new migration needs no edit here.
	all, err := migrate.List(engine.SQLite)
	if err != nil || len(all) < 23 || migrationName(all[0]) != "0001_init" {
		t.Fatalf("the embedded migrations: %d, %v", len(all), err)
	}
	var applied, status strings.Builder
	status.WriteString("^")
	for _, m := range all {
		applied.WriteString(migrationName(m) + "\tapplied\n")
		status.WriteString(regexp.QuoteMeta(migrationName(m)) + `\t\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n`)
	}
	status.WriteString("$")
	if got := c.stdout.String(); got != applied.String() {
		t.Fatalf("migrate up printed %q", got)
	}
	fi, err := os.Stat(dataDir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data dir after migrate up: %v %v", fi, err)
	}

	c = newTestCLI()
	if code := c.run("migrate", "status", "--data-dir", dataDir); code != 0 {
		t.Fatalf("migrate status = %d: %s", code, c.stderr)
	}
	if !regexp.MustCompile(status.String()).MatchString(c.stdout.String()) {
		t.Fatalf("migrate status printed %q, want the applied time", c.stdout)
	}

	c = newTestCLI()
	if code := c.run("migrate", "up", "--data-dir", dataDir); code != 0 || c.stdout.String() != "" {
		t.Fatalf("a second migrate up = %d, printed %q; want 0 and nothing", code, c.stdout)
	}
}

func TestServe(t *testing.T) {
	// serve runs until a signal; ready reports the App once it listens.
	start := func(t *testing.T) (*testCLI, *App, chan int) {
		t.Helper()
		c := newTestCLI()
		ready := make(chan *App, 1)
		c.onReady = func(a *App) { ready <- a }
		exit := make(chan int, 1)
		go func() {
			exit <- c.run("serve", "--data-dir", filepath.Join(t.TempDir(), "data"),
				"--listen-addr", "127.0.0.1:0", "--internal-listen-addr", "127.0.0.1:0")
		}()
		select {
		case a := <-ready:
			return c, a, exit
		case code := <-exit:
			t.Fatalf("serve exited with %d before it was ready: %s", code, c.stderr)
		case <-time.After(10 * time.Second):
			t.Fatalf("serve was not ready within 10s: %s", c.stderr)
		}
		return nil, nil, nil
	}
	waitExit := func(t *testing.T, c *testCLI, exit chan int) int {
		t.Helper()
		select {
		case code := <-exit:
			return code
		case <-time.After(15 * time.Second):
			t.Fatalf("serve did not exit within 15s: %s", c.stderr)
		}
		return -1
	}

	t.Run("logs the bound addresses and ends with 0 on a signal", func(t *testing.T) {
		c, a, exit := start(t)
		if !strings.Contains(c.stderr.String(), "msg=listening public="+a.PublicAddr()+" internal="+a.InternalAddr()) {
			t.Errorf("no listening line with both bound addresses in:\n%s", c.stderr)
		}
		code, body, _ := mustGet(t, "http://"+a.InternalAddr()+"/readyz")
		if code != 200 || body["status"] != "ready" {
			t.Errorf("/readyz = %d %v", code, body)
		}
		c.sigs <- syscall.SIGTERM
		if code := waitExit(t, c, exit); code != 0 {
			t.Fatalf("serve = %d after SIGTERM, want 0: %s", code, c.stderr)
		}
	})
	t.Run("ends with 3 on a second signal during shutdown", func(t *testing.T) {
		c, a, exit := start(t)
		stopping, release := make(chan struct{}), make(chan struct{})
		a.OnStop("slow", func(ctx context.Context) error {
			close(stopping)
			<-release
			return nil
		})
		c.sigs <- syscall.SIGTERM
		select {
		case <-stopping:
		case <-time.After(10 * time.Second):
			t.Fatal("the shutdown did not start")
		}
		c.sigs <- syscall.SIGINT
		code := waitExit(t, c, exit)
		close(release)
		if code != 3 {
			t.Fatalf("serve = %d after a second signal, want 3", code)
		}
		// Let the abandoned Run finish before the data dir goes away.
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := net.Dial("tcp", a.InternalAddr()); err != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the internal listener still answers 10s after the shutdown was released")
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	t.Run("ends with 1 when the port is taken", func(t *testing.T) {
		taken := closedPort(t)
		ln, err := net.Listen("tcp", taken)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		c := newTestCLI()
		code := c.run("serve", "--data-dir", filepath.Join(t.TempDir(), "data"), "--listen-addr", taken, "--internal-listen-addr", "127.0.0.1:0")
		if code != 1 {
			t.Fatalf("serve = %d on a taken port, want 1: %s", code, c.stderr)
		}
		if !strings.Contains(c.stderr.String(), "server.listen_addr") || !strings.Contains(c.stderr.String(), "in use by another process") {
			t.Fatalf("the log does not say that server.listen_addr is in use:\n%s", c.stderr)
		}
	})
	t.Run("a taken port ends the start before the data directory is created or migrated", func(t *testing.T) {
		for _, flag := range []string{"--listen-addr", "--internal-listen-addr"} {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			dataDir := filepath.Join(t.TempDir(), "data")
			args := map[string]string{"--listen-addr": "127.0.0.1:0", "--internal-listen-addr": "127.0.0.1:0"}
			args[flag] = ln.Addr().String()
			c := newTestCLI()
			code := c.run("serve", "--data-dir", dataDir, "--listen-addr", args["--listen-addr"], "--internal-listen-addr", args["--internal-listen-addr"])
			if code != 1 || !strings.Contains(c.stderr.String(), "in use by another process") {
				t.Fatalf("%s taken: serve = %d, want 1 saying the port is in use:\n%s", flag, code, c.stderr)
			}
			if _, err := os.Stat(dataDir); err == nil {
				t.Fatalf("%s taken: serve created the data directory", flag)
			}
			if strings.Contains(c.stderr.String(), "migration applied") {
				t.Fatalf("%s taken: serve migrated before it found the port taken:\n%s", flag, c.stderr)
			}
		}
	})
}

func TestSetup(t *testing.T) {
	const password = "correct horse battery staple"
	serve := func(t *testing.T, dataDir string) (stdout string) {
		t.Helper()
		c := newTestCLI()
		ready := make(chan *App, 1)
		c.onReady = func(a *App) { ready <- a }
		exit := make(chan int, 1)
		go func() {
			exit <- c.run("serve", "--data-dir", dataDir, "--listen-addr", "127.0.0.1:0", "--internal-listen-addr", "127.0.0.1:0")
		}()
		var a *App
		select {
		case a = <-ready:
		case code := <-exit:
			t.Fatalf("serve exited with %d: %s", code, c.stderr)
		case <-time.After(10 * time.Second):
			t.Fatalf("serve was not ready within 10s: %s", c.stderr)
		}
		stdout = c.stdout.String()
		if want := "http://" + a.PublicAddr() + "/console/setup?code="; stdout != "" && !strings.Contains(stdout, want) {
			t.Errorf("the setup line %q does not lead to %s", stdout, want)
		}
		c.sigs <- syscall.SIGTERM
		select {
		case code := <-exit:
			if code != 0 {
				t.Fatalf("serve = %d: %s", code, c.stderr)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("serve did not stop")
		}
		return stdout
	}
	bootstrap := func(dataDir string, args ...string) (*testCLI, int) {
		c := newTestCLI()
		c.stdin = strings.NewReader(password + "\n")
		code := c.run(append([]string{"setup", "bootstrap-owner", "--data-dir", dataDir, "--password-file", "-"}, args...)...)
		return c, code
	}
	setupLine := regexp.MustCompile(`^Open http://127\.0\.0\.1:\d+/console/setup\?code=[A-Za-z0-9_%-]+ to create the first owner\n$`)

	dataDir := filepath.Join(t.TempDir(), "data")
	t.Run("serve prints one setup line while no owner exists", func(t *testing.T) {
		out := serve(t, dataDir)
		if !setupLine.MatchString(out) {
			t.Fatalf("stdout = %q, want exactly the setup line", out)
		}
	})
	t.Run("bootstrap-owner refuses a handle the instance does not accept", func(t *testing.T) {
		c, code := bootstrap(dataDir, "--handle", "no spaces")
		if code != 2 || !strings.Contains(c.stderr.String(), "handle") {
			t.Fatalf("bootstrap-owner = %d, stderr %q; want 2 naming the handle", code, c.stderr)
		}
	})
	t.Run("bootstrap-owner creates the first owner and prints its id", func(t *testing.T) {
		c, code := bootstrap(dataDir, "--handle", "ada", "--display-name", "Ada Lovelace")
		if code != 0 {
			t.Fatalf("bootstrap-owner = %d: %s", code, c.stderr)
		}
		if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\n$`).MatchString(c.stdout.String()) {
			t.Fatalf("stdout = %q, want the owner's id alone", c.stdout)
		}
		if strings.Contains(c.stdout.String()+c.stderr.String(), password) {
			t.Fatal("the password shows in the output")
		}
	})
	t.Run("bootstrap-owner exits 3 once setup is complete", func(t *testing.T) {
		c, code := bootstrap(dataDir, "--handle", "bob")
		if code != 3 || !strings.Contains(c.stderr.String(), "already complete") {
			t.Fatalf("bootstrap-owner = %d, stderr %q; want 3", code, c.stderr)
		}
	})
	t.Run("serve prints no setup line once an owner exists", func(t *testing.T) {
		if out := serve(t, dataDir); out != "" {
			t.Fatalf("stdout = %q, want nothing", out)
		}
	})
}

func TestReadPassword(t *testing.T) {
	c := newTestCLI()
	c.stdin = strings.NewReader("correct horse battery staple\n")
	if p, err := c.readPassword("-"); err != nil || p != "correct horse battery staple" {
		t.Fatalf("readPassword(-) = %q, %v", p, err)
	}
	file := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(file, []byte(secretValue+"\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if p, err := c.readPassword(file); err != nil || p != secretValue {
		t.Fatalf("readPassword(file) = %q, %v", p, err)
	}
	c.stdin = strings.NewReader(strings.Repeat(secretValue, 1000))
	if _, err := c.readPassword("-"); err == nil || strings.Contains(err.Error(), secretValue) {
		t.Fatalf("readPassword of a huge input = %v", err)
	}
}

// closedPort returns a loopback host:port where nothing listens.
func closedPort(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func port(rawURL string) string {
	_, p, _ := net.SplitHostPort(strings.TrimPrefix(rawURL, "http://"))
	return p
}
