package appliance

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel/kerneltest"
	"bothy.dev/bothy/appliance/config"
	"bothy.dev/bothy/appliance/internal/runtest"
)

// testConfig is the default configuration on a fresh data directory with both listeners on
// port 0.
func testConfig(tb testing.TB) config.Config {
	tb.Helper()
	cfg := config.Default()
	cfg.Server.DataDir = filepath.Join(tb.TempDir(), "data")
	cfg.Server.ListenAddr = "127.0.0.1:0"
	cfg.Server.InternalListenAddr = "127.0.0.1:0"
	cfg.Shutdown.TotalTimeout = 10 * time.Second
	return cfg
}

func testLogger(tb testing.TB) *slog.Logger { return kerneltest.Logger(tb, slog.LevelDebug) }

func mustNew(tb testing.TB, cfg config.Config) *App {
	tb.Helper()
	a, err := New(context.Background(), cfg, testLogger(tb), io.Discard)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() { a.Close() })
	return a
}

// mustRun runs a until the test ends and returns once it is ready. stop ends Run and returns
// its result.
func mustRun(tb testing.TB, a *App) (stop func() error) {
	tb.Helper()
	return runtest.Run(tb, a, 10*time.Second, 15*time.Second)
}

func mustGet(tb testing.TB, url string) (int, map[string]any, http.Header) {
	tb.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		tb.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	var body map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &body); err != nil {
		tb.Fatalf("GET %s: body %q is not a JSON object: %v", url, b, err)
	}
	return resp.StatusCode, body, resp.Header
}

func TestRun(t *testing.T) {
	cfg := testConfig(t)
	a := mustNew(t, cfg)
	stop := mustRun(t, a)

	t.Run("binds port 0 and tells the addresses", func(t *testing.T) {
		for name, addr := range map[string]string{"public": a.PublicAddr(), "internal": a.InternalAddr()} {
			if !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":0") {
				t.Errorf("%s address = %q, want the bound 127.0.0.1 port", name, addr)
			}
		}
		if got, want := a.PublicURL(), "http://"+a.PublicAddr(); got != want {
			t.Errorf("PublicURL = %q, want %q", got, want)
		}
	})
	t.Run("answers /healthz on the internal listener", func(t *testing.T) {
		status, body, h := mustGet(t, "http://"+a.InternalAddr()+"/healthz")
		if status != 200 || body["status"] != "ok" || h.Get("Content-Type") != "application/json" {
			t.Fatalf("/healthz = %d %v %s", status, body, h.Get("Content-Type"))
		}
	})
	t.Run("is ready once started", func(t *testing.T) {
		status, body, _ := mustGet(t, "http://"+a.InternalAddr()+"/readyz")
		if status != 200 || body["status"] != "ready" {
			t.Fatalf("/readyz = %d %v", status, body)
		}
	})
	t.Run("keeps health off the public listener", func(t *testing.T) {
		resp, err := http.Get("http://" + a.PublicAddr() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("public /healthz = %d, want 404", resp.StatusCode)
		}
	})
	t.Run("creates the data directory with mode 0700 and the database in it", func(t *testing.T) {
		fi, err := os.Stat(cfg.Server.DataDir)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Fatalf("data dir mode = %v, want 0700", fi.Mode().Perm())
		}
		if _, err := os.Stat(filepath.Join(cfg.Server.DataDir, "bothy.db")); err != nil {
			t.Fatalf("bothy.db: %v", err)
		}
	})
	t.Run("stops in order when its context ends", func(t *testing.T) {
		if err := stop(); err != nil {
			t.Fatalf("Run = %v, want nil after an orderly shutdown", err)
		}
		if _, err := http.Get("http://" + a.InternalAddr() + "/healthz"); err == nil {
			t.Fatal("the internal listener still answers after Run returned")
		}
		if err := a.DB.Ping(context.Background()); err == nil {
			t.Fatal("the store is still open after Run returned")
		}
	})
}

func TestReadiness(t *testing.T) {
	readyz := func(a *App) (int, map[string]any) {
		rec := httptest.NewRecorder()
		a.healthHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("/readyz body %q: %v", rec.Body.String(), err)
		}
		return rec.Code, body
	}

	t.Run("is not ready before Run", func(t *testing.T) {
		a := mustNew(t, testConfig(t))
		if code, body := readyz(a); code != 503 || body["status"] != "not_ready" || body["reason"] != "startup" {
			t.Fatalf("/readyz = %d %v, want 503 startup", code, body)
		}
	})
	t.Run("is not ready when the database does not answer", func(t *testing.T) {
		a := mustNew(t, testConfig(t))
		a.state.Store("")
		if code, _ := readyz(a); code != 200 {
			t.Fatalf("/readyz = %d before closing the store", code)
		}
		a.Close()
		if code, body := readyz(a); code != 503 || body["reason"] != "database" {
			t.Fatalf("/readyz = %d %v, want 503 database", code, body)
		}
	})
	t.Run("is not ready while shutting down, and stop hooks run then", func(t *testing.T) {
		a := mustNew(t, testConfig(t))
		var during struct {
			code int
			body map[string]any
		}
		hookRan := false
		a.OnStop("probe", func(ctx context.Context) error {
			hookRan = true
			during.code, during.body, _ = mustGet(t, "http://"+a.InternalAddr()+"/readyz")
			return nil
		})
		stop := mustRun(t, a)
		if err := stop(); err != nil {
			t.Fatalf("Run = %v", err)
		}
		if !hookRan {
			t.Fatal("the stop hook did not run")
		}
		if during.code != 503 || during.body["reason"] != "shutting_down" {
			t.Fatalf("/readyz during shutdown = %d %v, want 503 shutting_down", during.code, during.body)
		}
	})
}

func TestBackgroundTasks(t *testing.T) {
	t.Run("a background task runs until shutdown", func(t *testing.T) {
		a := mustNew(t, testConfig(t))
		started := make(chan struct{})
		stoppedCleanly := make(chan struct{})
		a.Background("tail", func(ctx context.Context) error {
			close(started)
			<-ctx.Done()
			close(stoppedCleanly)
			return ctx.Err()
		})
		stop := mustRun(t, a)
		<-started
		if err := stop(); err != nil {
			t.Fatalf("Run = %v", err)
		}
		select {
		case <-stoppedCleanly:
		default:
			t.Fatal("Run returned before the background task ended")
		}
	})
	t.Run("a failing background task ends Run with its error", func(t *testing.T) {
		a := mustNew(t, testConfig(t))
		a.Background("hub", func(ctx context.Context) error { return io.ErrUnexpectedEOF })
		done := make(chan error, 1)
		go func() { done <- a.Run(context.Background()) }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "hub") {
				t.Fatalf("Run = %v, want the hub's failure", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not end after its background task failed")
		}
	})
	t.Run("a shutdown beyond the total timeout is an error", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.Shutdown.TotalTimeout = 50 * time.Millisecond
		a := mustNew(t, cfg)
		a.OnStop("slow", func(ctx context.Context) error {
			<-ctx.Done()
			return nil
		})
		stop := mustRun(t, a)
		if err := stop(); err == nil || !strings.Contains(err.Error(), "shutdown.total_timeout") {
			t.Fatalf("Run = %v, want the shutdown timeout", err)
		}
	})
}

func TestRunRefusesATakenPort(t *testing.T) {
	first := mustNew(t, testConfig(t))
	mustRun(t, first)
	cfg := testConfig(t)
	cfg.Server.ListenAddr = first.PublicAddr()
	a := mustNew(t, cfg)
	err := a.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "server.listen_addr") {
		t.Fatalf("Run = %v, want an error naming server.listen_addr", err)
	}
}

func TestDataDirectory(t *testing.T) {
	t.Run("tightens an existing directory of ours to 0700", func(t *testing.T) {
		cfg := testConfig(t)
		if err := os.Mkdir(cfg.Server.DataDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(cfg.Server.DataDir, 0o755); err != nil {
			t.Fatal(err)
		}
		mustNew(t, cfg)
		fi, err := os.Stat(cfg.Server.DataDir)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Fatalf("mode = %v, want 0700", fi.Mode().Perm())
		}
	})
	t.Run("leaves a shared directory alone", func(t *testing.T) {
		cfg := testConfig(t)
		if err := os.Mkdir(cfg.Server.DataDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(cfg.Server.DataDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cfg.Server.DataDir, "someone-elses.txt"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		mustNew(t, cfg)
		fi, err := os.Stat(cfg.Server.DataDir)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o755 {
			t.Fatalf("mode = %v, want it unchanged (0755)", fi.Mode().Perm())
		}
	})
	t.Run("refuses a data dir that is a file", func(t *testing.T) {
		cfg := testConfig(t)
		if err := os.WriteFile(cfg.Server.DataDir, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := New(context.Background(), cfg, testLogger(t), io.Discard); err == nil {
			t.Fatal("New accepted a data dir that is a file")
		}
	})
	t.Run("migrates once and opens again", func(t *testing.T) {
		cfg := testConfig(t)
		a := mustNew(t, cfg)
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		mustNew(t, cfg)
	})
}

func TestPublicURL(t *testing.T) {
	lan := func() ([]net.Addr, error) {
		return []net.Addr{
			&net.IPNet{IP: net.ParseIP("127.0.0.1"), Mask: net.CIDRMask(8, 32)},
			&net.IPNet{IP: net.ParseIP("fe80::1"), Mask: net.CIDRMask(64, 128)},
			&net.IPNet{IP: net.ParseIP("2001:db8::7"), Mask: net.CIDRMask(64, 128)},
			&net.IPNet{IP: net.ParseIP("192.0.2.7"), Mask: net.CIDRMask(24, 32)},
		}, nil
	}
	v6only := func() ([]net.Addr, error) {
		return []net.Addr{&net.IPNet{IP: net.ParseIP("::1"), Mask: net.CIDRMask(128, 128)},
			&net.IPNet{IP: net.ParseIP("2001:db8::7"), Mask: net.CIDRMask(64, 128)}}, nil
	}
	loopbackOnly := func() ([]net.Addr, error) {
		return []net.Addr{&net.IPNet{IP: net.ParseIP("127.0.0.1"), Mask: net.CIDRMask(8, 32)}}, nil
	}
	for _, tt := range []struct {
		name, publicURL, listen string
		addrs                   func() ([]net.Addr, error)
		want                    string
		guessed                 bool
	}{
		{"server.public_url wins", "https://chat.example.com", "0.0.0.0:8080", lan, "https://chat.example.com", false},
		{"a loopback listener is its own address", "", "127.0.0.1:8080", lan, "http://127.0.0.1:8080", false},
		{"0.0.0.0 becomes the machine's IPv4 address", "", "0.0.0.0:8080", lan, "http://192.0.2.7:8080", true},
		{"[::] becomes the machine's IPv4 address", "", "[::]:8080", lan, "http://192.0.2.7:8080", true},
		{"no host becomes the machine's IPv4 address", "", ":8080", lan, "http://192.0.2.7:8080", true},
		{"an IPv6-only machine gets its IPv6 address", "", ":8080", v6only, "http://[2001:db8::7]:8080", true},
		{"a machine without another address gets localhost", "", "0.0.0.0:8080", loopbackOnly, "http://localhost:8080", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := &App{Config: config.Default(), interfaceAddrs: tt.addrs}
			a.Config.Server.PublicURL, a.Config.Server.ListenAddr = tt.publicURL, tt.listen
			if got := a.PublicURL(); got != tt.want {
				t.Errorf("PublicURL(%q, %q) = %q, want %q", tt.publicURL, tt.listen, got, tt.want)
			}
			if got := a.publicURLGuessed(); got != tt.guessed {
				t.Errorf("publicURLGuessed = %v, want %v", got, tt.guessed)
			}
		})
	}
}
