package tests

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Deadlines of the harness. Every wait re-checks its condition inside the loop and gives up at
// its deadline, so a test never hangs on a server that stopped answering.
const (
	startDeadline = 10 * time.Second
	readyDeadline = 10 * time.Second
	stopDeadline  = 15 * time.Second
)

// server is one bothy process on a data directory (SQLite) or on a database of its own
// (PostgreSQL).
type server struct {
	eng     engine
	dataDir string
	// dbURL is the PostgreSQL database's URL, given to the process as DATABASE_URL.
	dbURL string
	// public and internal are base URLs such as http://127.0.0.1:41234. They change on restart:
	// the listeners are on port 0.
	public   string
	internal string
	// setupCode is the code of the setup line, when the process printed one; setupLink the
	// whole link.
	setupCode, setupLink string

	// args are extra command-line arguments of every start (such as --set key=value).
	args []string

	cmd    *exec.Cmd
	exited chan struct{}
	err    error // the exit status, once exited is closed
	logs   *logTail
}

// logTail keeps the last 40 lines a process wrote, to show them when a test fails.
type logTail struct {
	mu    sync.Mutex
	lines []string
	// leak is the first line that shows a database URL, a secret the server must never print.
	leak string
}

func (l *logTail) leaked() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leak
}

func (l *logTail) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.leak == "" && leaksURL(line) {
		l.leak = line
	}
	l.lines = append(l.lines, line)
	if len(l.lines) > 40 {
		l.lines = l.lines[len(l.lines)-40:]
	}
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// mustStart starts bothy on eng with a fresh data directory and, on PostgreSQL, a fresh
// database migrated with `bothy migrate up` (dropped when the test ends), and waits until it is
// ready and has printed its setup line. args are added to the command line of every start.
func mustStart(tb testing.TB, eng engine, args ...string) *server {
	tb.Helper()
	s := &server{eng: eng, dataDir: tb.TempDir(), args: args}
	if eng == postgresEngine {
		s.dbURL = mustPostgresDatabase(tb)
		mustMigrateUp(tb, s.dbURL)
	}
	s.mustBoot(tb, true)
	return s
}

var (
	setupLine = regexp.MustCompile(`Open (\S+)/console/setup\?code=(\S+) to create the first owner`)
	// A host:port value of a key=value pair in a text log line.
	kvAddr = regexp.MustCompile(`(?:^|\s)([A-Za-z_.]+)="?([0-9A-Za-z.\-\[\]:]+:[0-9]+)"?`)
)

// mustBoot runs the process on s.dataDir, or on s.dbURL on PostgreSQL. wantSetup waits for the
// setup line as well, which a fresh instance prints after its listening line.
func (s *server) mustBoot(tb testing.TB, wantSetup bool) {
	tb.Helper()
	args := []string{"serve",
		"--data-dir", s.dataDir,
		"--listen-addr", "127.0.0.1:0",
		"--internal-listen-addr", "127.0.0.1:0"}
	switch s.eng {
	case sqliteEngine:
	case postgresEngine:
		args = append(args, postgresFlags...)
	default:
		tb.Fatalf("unknown engine %q", s.eng)
	}
	args = append(args, s.args...)
	cmd := exec.Command(binPath, args...)
	cmd.Env = envWithDatabase(s.dbURL)
	// The server dies with the test binary, whatever happens to it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatalf("stdout pipe: %v", err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatalf("stderr pipe: %v", err)
	}
	logs := &logTail{}
	s.logs = logs
	s.public, s.internal, s.setupCode, s.setupLink = "", "", "", ""
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", binPath, err)
	}
	s.cmd = cmd
	s.exited = make(chan struct{})

	type found struct{ public, internal, link, code string }
	finds := make(chan found, 16)
	// Readers never block on a finding nobody waits for any more.
	send := func(f found) {
		select {
		case finds <- f:
		default:
		}
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			logs.add("stdout: " + line)
			if m := setupLine.FindStringSubmatch(line); m != nil {
				code, err := url.QueryUnescape(m[2])
				if err != nil {
					code = m[2]
				}
				send(found{link: m[1] + "/console/setup?code=" + m[2], code: code})
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			logs.add("stderr: " + line)
			if pub, in, ok := parseListening(line); ok {
				send(found{public: pub, internal: in})
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	go func() {
		readers.Wait()
		s.err = cmd.Wait()
		close(s.exited)
	}()
	tb.Cleanup(func() {
		s.stop(tb)
		if l := logs.leaked(); l != "" {
			tb.Errorf("bothy serve printed a database URL: %s", l)
		}
		if tb.Failed() {
			tb.Logf("output of bothy serve on %s %s:\n%s", s.eng, s.dataDir, logs)
		}
	})

	deadline := time.NewTimer(startDeadline)
	defer deadline.Stop()
	for s.public == "" || s.internal == "" || (wantSetup && s.setupCode == "") {
		select {
		case f := <-finds:
			if f.public != "" {
				s.public = "http://" + f.public
			}
			if f.internal != "" {
				s.internal = "http://" + f.internal
			}
			if f.code != "" {
				s.setupCode, s.setupLink = f.code, f.link
			}
		case <-s.exited:
			tb.Fatalf("bothy serve exited before it was listening (%v)", s.err)
		case <-deadline.C:
			tb.Fatalf("bothy serve printed no listening line with both addresses%s within %s",
				map[bool]string{true: " and no setup line", false: ""}[wantSetup], startDeadline)
		}
	}
	s.mustBeReady(tb)
}

// parseListening reads the structured log line with msg "listening" in slog's text or JSON
// form and returns the public and internal host:port.
func parseListening(line string) (public, internal string, ok bool) {
	if strings.HasPrefix(strings.TrimSpace(line), "{") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil || m["msg"] != "listening" {
			return "", "", false
		}
		for k, v := range m {
			s, _ := v.(string)
			if !strings.Contains(s, ":") || k == "msg" || k == "time" || k == "level" {
				continue
			}
			if strings.Contains(k, "internal") {
				internal = s
			} else if strings.Contains(k, "public") || strings.Contains(k, "addr") || strings.Contains(k, "listen") {
				public = s
			}
		}
		return public, internal, public != "" || internal != ""
	}
	if !strings.Contains(line, "msg=listening") {
		return "", "", false
	}
	for _, m := range kvAddr.FindAllStringSubmatch(line, -1) {
		k, v := m[1], m[2]
		if k == "time" {
			continue
		}
		if strings.Contains(k, "internal") {
			internal = v
		} else if strings.Contains(k, "public") || strings.Contains(k, "addr") || strings.Contains(k, "listen") {
			public = v
		}
	}
	return public, internal, public != "" || internal != ""
}

// cleanEnv is the test's environment without BOTHY_ variables and DATABASE_URL, so a
// developer's settings do not leak into the server under test.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BOTHY_") && !strings.HasPrefix(kv, dbURLEnv+"=") {
			env = append(env, kv)
		}
	}
	return env
}

// mustBeReady polls GET /readyz on the internal listener until it answers 200.
func (s *server) mustBeReady(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(readyDeadline)
	hc := &http.Client{Timeout: 2 * time.Second}
	last := "no answer"
	for {
		select {
		case <-s.exited:
			tb.Fatalf("bothy serve exited before it was ready (%v)", s.err)
		default:
		}
		resp, err := hc.Get(s.internal + "/readyz")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = resp.Status + " " + string(b)
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			tb.Fatalf("GET /readyz did not answer 200 within %s (last: %s)", readyDeadline, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// running reports whether the process has not exited.
func (s *server) running() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and waits; a process that does not stop in time is killed. It returns
// the exit status (nil for exit 0). Stopping a stopped server does nothing.
func (s *server) stop(tb testing.TB) error {
	tb.Helper()
	if s.cmd == nil || !s.running() {
		return s.err
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		return s.err
	case <-time.After(stopDeadline):
		_ = s.cmd.Process.Kill()
		<-s.exited
		tb.Errorf("bothy serve did not stop within %s of SIGTERM; killed it", stopDeadline)
		return s.err
	}
}

// kill9 ends the process at once, as a power cut would.
func (s *server) kill9(tb testing.TB) {
	tb.Helper()
	if !s.running() {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-s.exited:
	case <-time.After(stopDeadline):
		tb.Fatalf("bothy serve did not die of SIGKILL within %s", stopDeadline)
	}
}

// mustRestart stops the process (if it still runs) and starts it again on the same data
// directory; the listeners get new ports.
func (s *server) mustRestart(tb testing.TB) {
	tb.Helper()
	if err := s.stop(tb); err != nil && s.cmd.ProcessState != nil && !isSignalled(s.cmd.ProcessState) {
		tb.Errorf("bothy serve exited with %v on SIGTERM", err)
	}
	s.mustBoot(tb, false)
}

func isSignalled(ps *os.ProcessState) bool {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}
