package servebench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests run this test binary as a stand-in for `bothy serve` (BOTHYBENCH_FAKE_SERVE set): it
// takes serve's flags, answers /readyz 503 for its first 30 ms and 200 after, prints the setup
// line and ends with 0 on SIGTERM. That checks the harness in milliseconds, without building
// bothy; bench/run measures the real binary.
func TestMain(m *testing.M) {
	if mode := os.Getenv("BOTHYBENCH_FAKE_SERVE"); mode != "" {
		os.Exit(fakeServe(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

const fakeStartup = 30 * time.Millisecond

func fakeServe(mode string, args []string) int {
	// Options.Env reaches both commands: the fake wants DATABASE_URL when mode is "env".
	if mode == "env" && os.Getenv("DATABASE_URL") != "postgres://fake" {
		fmt.Fprintln(os.Stderr, "no DATABASE_URL")
		return 1
	}
	if os.Getenv("BOTHY_BENCH_POSTGRES_URL") != "" { // bothy refuses unknown BOTHY_ variables
		fmt.Fprintln(os.Stderr, "BOTHY_BENCH_POSTGRES_URL (env): unknown variable")
		return 1
	}
	if len(args) >= 2 && args[0] == "migrate" && args[1] == "up" {
		if slices.Contains(args, "database.driver=postgres") {
			fmt.Println("0001_init\tapplied")
			return 0
		}
		fmt.Fprintln(os.Stderr, "migrate: not the arguments of the test")
		return 1
	}
	if len(args) == 0 || args[0] != "serve" {
		return 2
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "")
	public := fs.String("listen-addr", "", "")
	internal := fs.String("internal-listen-addr", "", "")
	fs.Func("set", "", func(string) error { return nil })
	if fs.Parse(args[1:]) != nil || *dataDir == "" {
		return 2
	}
	if mode == "exit" {
		fmt.Fprintln(os.Stderr, "level=ERROR msg=\"start failed\"")
		return 1
	}
	began := time.Now()
	if err := os.MkdirAll(*dataDir, 0o700); err != nil {
		return 1
	}
	iln, err := net.Listen("tcp", *internal)
	if err != nil {
		return 1
	}
	pln, err := net.Listen("tcp", *public)
	if err != nil {
		return 1
	}
	go http.Serve(iln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if time.Since(began) < fakeStartup {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	go http.Serve(pln, http.NotFoundHandler())
	fmt.Printf("Open http://%s/setup?code=a%%2Bb to create the first owner\n", pln.Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
	return 0
}

func fake(t *testing.T, mode string) Options {
	t.Setenv("BOTHYBENCH_FAKE_SERVE", mode)
	// Under -race the child would otherwise sleep 1 s at exit.
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Options{Bin: self, DataDir: t.TempDir() + "/data", WantSetupCode: true}
}

func TestServe(t *testing.T) {
	ctx := context.Background()
	t.Run("times a start to the first 200 of readyz and reads the setup code", func(t *testing.T) {
		s, err := Start(ctx, fake(t, "serve"))
		if err != nil {
			t.Fatal(err)
		}
		if s.StartToReady < fakeStartup || s.StartToReady > 5*time.Second {
			t.Errorf("start to ready %v, want at least the fake's %v", s.StartToReady, fakeStartup)
		}
		if s.SetupCode != "a+b" || !strings.HasPrefix(s.Public, "http://127.0.0.1:") {
			t.Errorf("setup code %q, public %q", s.SetupCode, s.Public)
		}
		if s.RSSAtReady < 1<<20 {
			t.Errorf("RSS at ready %d bytes", s.RSSAtReady)
		}
		if cpu, err := s.CPU(); err != nil || cpu < 0 {
			t.Errorf("CPU %v, %v", cpu, err)
		}
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("gives one sample per start", func(t *testing.T) {
		o := fake(t, "serve")
		o.WantSetupCode = false
		samples, err := Starts(ctx, o, 3, func(int) string { return o.DataDir })
		if err != nil || len(samples) != 3 {
			t.Fatalf("%d samples, %v", len(samples), err)
		}
		at, idle, err := IdleRSS(ctx, o, 10*time.Millisecond)
		if err != nil || at <= 0 || idle <= 0 {
			t.Fatalf("RSS %d then %d, %v", at, idle, err)
		}
	})
	t.Run("passes Env to serve and to migrate up, with Args", func(t *testing.T) {
		o := fake(t, "env")
		t.Setenv("BOTHY_BENCH_POSTGRES_URL", "postgres://cluster") // the benchmark's own: not passed on
		if err := MigrateUp(ctx, o); err == nil || !strings.Contains(err.Error(), "no DATABASE_URL") {
			t.Fatalf("migrate up without Env: %v", err)
		}
		o.Env = []string{"DATABASE_URL=postgres://fake"}
		o.Args = []string{"--set", "database.driver=postgres"}
		if err := MigrateUp(ctx, o); err != nil {
			t.Fatal(err)
		}
		s, err := Start(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("reports a server that exits before it is ready, with its log", func(t *testing.T) {
		_, err := Start(ctx, fake(t, "exit"))
		if !errors.Is(err, errExited) || !strings.Contains(err.Error(), "start failed") {
			t.Fatalf("err = %v", err)
		}
	})
}
