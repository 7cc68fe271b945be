// Package servebench runs the real `bothy serve` binary as a separate process, the way an
// operator starts it, for the benchmarks that need the whole appliance: the time from exec to
// the first 200 of /readyz, the resident memory of the process, and a running server for the
// HTTP load of bench/http. It starts, watches and stops the process and reads /proc; it must not
// import the appliance, so that what it measures is the binary a user runs.
package servebench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"bothy.dev/bothy/bench/internal/measure"
)

// Deadlines: every wait re-checks inside its loop and gives up at its deadline, so a run
// never hangs.
const (
	readyDeadline = 10 * time.Second
	stopDeadline  = 15 * time.Second
	// PollInterval is how often Start asks /readyz: the start-to-ready figure is at most this
	// much late.
	PollInterval = time.Millisecond
)

// Options say which binary to run on which data directory.
type Options struct {
	// Bin is the bothy binary.
	Bin string
	// DataDir is --data-dir; serve creates it when it does not exist.
	DataDir string
	// LogLevel is log.level; "" is warn, so that the access log (info) costs nothing under load.
	LogLevel string
	// WantSetupCode makes Start also wait for the setup line on stdout, which serve prints
	// while no owner exists.
	WantSetupCode bool
	// Args are more arguments for serve, such as "--set", "database.max_batch=64", or
	// PostgreSQL's "--set", "database.driver=postgres", "--set", "database.url_ref=env:DATABASE_URL".
	Args []string
	// Env are more environment variables ("KEY=value") for the process, on top of this
	// process's own, such as the DATABASE_URL that database.url_ref names. Not BOTHY_…: serve
	// takes those as configuration keys.
	Env []string
}

// benchEnvPrefix starts the benchmarks' own variables (BOTHY_BENCH_POSTGRES_URL): bothy would
// take them for configuration keys and refuse to start (it skips only BOTHY_TEST_…).
const benchEnvPrefix = "BOTHY_BENCH_"

// childEnv is this process's environment without the benchmarks' own variables, and extra.
func childEnv(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, benchEnvPrefix) {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// MigrateUp runs `bothy migrate up` with o's binary, Args and Env, as an operator does before
// starting serve on PostgreSQL (where serve never migrates), and returns its output on failure.
func MigrateUp(ctx context.Context, o Options) error {
	ctx, cancel := context.WithTimeout(ctx, readyDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, o.Bin, append([]string{"migrate", "up"}, o.Args...)...)
	cmd.Env = childEnv(o.Env)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("bothy migrate up: %w:\n%s", err, out)
	}
	return nil
}

// Server is one running `bothy serve` process.
type Server struct {
	// Public and Internal are base URLs such as http://127.0.0.1:41234.
	Public, Internal string
	// SetupCode is the code of the setup line, when Options.WantSetupCode asked for it.
	SetupCode string
	// StartToReady is the time from just before exec to the first 200 of GET /readyz, polled
	// every PollInterval.
	StartToReady time.Duration
	// RSSAtReady is VmRSS read right after that 200.
	RSSAtReady int64

	cmd    *exec.Cmd
	exited chan struct{}
	err    error // the exit status, once exited is closed
	logs   *tail
}

var setupLine = regexp.MustCompile(`Open (\S+)/setup\?code=(\S+) to create the first owner`)

// Start runs bothy serve on loopback ports and returns once /readyz answers 200 (and, with
// WantSetupCode, the setup line is read). The process dies with the caller (SIGKILL on the
// parent's death); Stop ends it in order.
//
// The ports are chosen before exec (bind port 0, close, pass the port), because with
// log.level=warn serve prints no listening line; if another process takes a port in between,
// serve exits and Start tries again with new ports.
func Start(ctx context.Context, o Options) (*Server, error) {
	var err error
	for range 3 {
		var s *Server
		if s, err = start(ctx, o); err == nil {
			return s, nil
		}
		if !errors.Is(err, errExited) {
			return nil, err
		}
	}
	return nil, err
}

var errExited = errors.New("bothy serve exited before it was ready")

func start(ctx context.Context, o Options) (*Server, error) {
	pub, err := freePort()
	if err != nil {
		return nil, err
	}
	internal, err := freePort()
	if err != nil {
		return nil, err
	}
	level := o.LogLevel
	if level == "" {
		level = "warn"
	}
	args := append([]string{"serve", "--data-dir", o.DataDir, "--listen-addr", pub, "--internal-listen-addr", internal,
		"--set", "log.level=" + level}, o.Args...)
	cmd := exec.Command(o.Bin, args...)
	cmd.Env = childEnv(o.Env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	s := &Server{Public: "http://" + pub, Internal: "http://" + internal, cmd: cmd, exited: make(chan struct{}), logs: &tail{}}
	codes := make(chan string, 1)

	// The readiness probe is built before the clock starts, so that exec is the first thing timed.
	probe := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableCompression: true}}
	defer probe.CloseIdleConnections()
	readyz := s.Internal + "/readyz"
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Bin, err)
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.logs.add("stdout: " + sc.Text())
			if m := setupLine.FindStringSubmatch(sc.Text()); m != nil {
				code, err := url.QueryUnescape(m[2])
				if err != nil {
					code = m[2]
				}
				select {
				case codes <- code:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			s.logs.add("stderr: " + sc.Text())
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	go func() {
		readers.Wait()
		s.err = cmd.Wait()
		close(s.exited)
	}()

	deadline := began.Add(readyDeadline)
	for next := began; ; {
		if ok, err := ready(ctx, probe, readyz); err != nil {
			s.kill()
			return nil, err
		} else if ok {
			s.StartToReady = time.Since(began)
			break
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("%w (%v):\n%s", errExited, s.err, s.logs)
		default:
		}
		if time.Now().After(deadline) {
			s.kill()
			return nil, fmt.Errorf("bothy serve: /readyz did not answer 200 within %s:\n%s", readyDeadline, s.logs)
		}
		next = next.Add(PollInterval)
		time.Sleep(time.Until(next))
	}
	if s.RSSAtReady, err = measure.RSS(cmd.Process.Pid); err != nil {
		s.kill()
		return nil, err
	}
	if o.WantSetupCode {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		select {
		case s.SetupCode = <-codes:
		case <-s.exited:
			return nil, fmt.Errorf("%w (%v) without a setup line:\n%s", errExited, s.err, s.logs)
		case <-t.C:
			s.kill()
			return nil, fmt.Errorf("bothy serve printed no setup line within %s:\n%s", readyDeadline, s.logs)
		}
	}
	return s, nil
}

// ready asks /readyz once. A refused connection or a 503 is "not yet"; only the caller's end is
// an error.
func ready(ctx context.Context, c *http.Client, u string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return false, nil
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, nil
}

// freePort returns a loopback host:port that was free a moment ago.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// RSS is the server's resident memory now, in bytes.
func (s *Server) RSS() (int64, error) { return measure.RSS(s.Pid()) }

// CPU is the CPU time the server has used so far (user + system, all threads).
func (s *Server) CPU() (time.Duration, error) { return measure.ProcCPU(s.Pid()) }

// Logs returns the last lines the server wrote, for an error message.
func (s *Server) Logs() string { return s.logs.String() }

// Stop sends SIGTERM and waits for the orderly end; it reports an exit status other than 0 and
// kills the process if it is not gone within 15 s.
func (s *Server) Stop() error {
	select {
	case <-s.exited:
		return fmt.Errorf("bothy serve had already exited (%v):\n%s", s.err, s.logs)
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(stopDeadline)
	defer t.Stop()
	select {
	case <-s.exited:
	case <-t.C:
		s.kill()
		return fmt.Errorf("bothy serve did not stop within %s of SIGTERM:\n%s", stopDeadline, s.logs)
	}
	if s.err != nil {
		return fmt.Errorf("bothy serve ended with %v:\n%s", s.err, s.logs)
	}
	return nil
}

// kill ends the process at once and waits for it (bounded: SIGKILL cannot be refused).
func (s *Server) kill() {
	_ = s.cmd.Process.Kill()
	select {
	case <-s.exited:
	case <-time.After(stopDeadline):
	}
}

// tail keeps the last 30 lines a process wrote.
type tail struct {
	mu    sync.Mutex
	lines []string
}

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	if len(t.lines) > 30 {
		t.lines = t.lines[len(t.lines)-30:]
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}

// Sample is one start of the server: the time from exec to ready and the memory at ready.
type Sample struct {
	ToReady time.Duration
	RSS     int64
}

// Starts starts the server n times, one after the other, on the data directory dataDir(i) for
// the i-th start, and stops it in order each time right after it is ready.
func Starts(ctx context.Context, o Options, n int, dataDir func(i int) string) ([]Sample, error) {
	out := make([]Sample, 0, n)
	for i := range n {
		o.DataDir = dataDir(i)
		s, err := Start(ctx, o)
		if err != nil {
			return nil, err
		}
		out = append(out, Sample{s.StartToReady, s.RSSAtReady})
		if err := s.Stop(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// IdleRSS starts the server and reads its resident memory right after ready and again after
// idle without a request.
func IdleRSS(ctx context.Context, o Options, idle time.Duration) (atReady, afterIdle int64, err error) {
	s, err := Start(ctx, o)
	if err != nil {
		return 0, 0, err
	}
	select {
	case <-time.After(idle):
	case <-ctx.Done():
	}
	afterIdle, err = s.RSS()
	if stopErr := s.Stop(); err == nil {
		err = stopErr
	}
	return s.RSSAtReady, afterIdle, err
}
