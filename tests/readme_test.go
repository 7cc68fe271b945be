package tests

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The README's walk-throughs, run as a reader runs them: the shell blocks of the two sections
// below, in order, with bash, curl and jq, against a fresh server, and the Go program of the bot
// section built the way the README says a bot depends on client/.
const (
	readmeWalkThrough = "A walk through the API with curl"
	readmeBot         = "Connect a bot in five minutes"
)

// readmeBlock is one fenced code block of README.md.
type readmeBlock struct {
	lang string
	text string
	line int // of the opening fence, 1-based
}

func (b readmeBlock) String() string { return fmt.Sprintf("README.md:%d", b.line) }

// readmeSection returns the fenced blocks of the section titled title ("## title" up to the
// next "## ").
func readmeSection(tb testing.TB, md, title string) []readmeBlock {
	tb.Helper()
	var out []readmeBlock
	in, found := false, false
	var cur *readmeBlock
	for i, line := range strings.Split(md, "\n") {
		switch {
		case cur != nil && strings.HasPrefix(line, "```"):
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		case strings.HasPrefix(line, "## "):
			in = strings.TrimPrefix(line, "## ") == title
			found = found || in
		case in && strings.HasPrefix(line, "```"):
			cur = &readmeBlock{lang: strings.TrimPrefix(line, "```"), line: i + 1}
		}
	}
	if !found || len(out) == 0 {
		tb.Fatalf("README.md has no section %q with code blocks", title)
	}
	return out
}

// The harness's substitutions, the only changes made to the README's text: the server the test
// started instead of http://127.0.0.1:8080, and its setup code instead of the placeholder.
var (
	readmeOrigin   = "http://127.0.0.1:8080"
	readmeCodeLine = regexp.MustCompile(`(?m)^CODE='[^']*'`)
	// The blocks that start an agent, which runs until it is stopped: the test runs each on its
	// own, has it answer a mention and stops it with SIGINT.
	readmeLongRunning = regexp.MustCompile(`(?m)^[^#\n]*\./(bothy agent|echobot)\b`)
	// A documented status, "# 201 {…}" on a line of its own.
	readmeStatus = regexp.MustCompile(`(?m)^#\s+([1-5][0-9][0-9])\b`)
	// A variable the blocks set, which the later blocks and the test read.
	readmeAssign = regexp.MustCompile(`(?m)(?:^|;\s*)([A-Z][A-Z0-9_]*)=`)
)

// readmeHarness goes before the README's text: every error ends the script, and curl fails on an
// HTTP error status (printing the body) and reports each status on stderr.
const readmeHarness = `set -euo pipefail
curl() { command curl --fail-with-body -w '%{stderr}@@status %{http_code}\n' "$@"; }
`

// expectedListing is the output a block documents: the comment lines "# {…}" that end it, "…"
// standing for anything.
func expectedListing(b readmeBlock) []string {
	lines := strings.Split(strings.TrimRight(b.text, "\n"), "\n")
	var out []string
	for i := len(lines) - 1; i >= 0 && strings.HasPrefix(lines[i], "# {"); i-- {
		out = append([]string{strings.TrimPrefix(lines[i], "# ")}, out...)
	}
	return out
}

func matchesListing(want, got string) bool {
	parts := strings.Split(want, "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`^` + strings.Join(parts, ".*") + `$`).MatchString(got)
}

// blockOutputs splits what the script wrote by the markers it printed before each block.
func blockOutputs(out string) map[int][]string {
	m := map[int][]string{}
	n := -1
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "@@block "); ok {
			n, _ = strconv.Atoi(rest)
			continue
		}
		if n >= 0 && strings.TrimSpace(line) != "" {
			m[n] = append(m[n], line)
		}
	}
	return m
}

// needTools skips the test where bash, curl or jq is missing, and fails it under CI, which
// installs them.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is missing: the README test runs the README's commands with it", tool)
			}
			t.Skipf("%s is missing: the README test runs the README's commands with it", tool)
		}
	}
}

// TestREADME runs the README's walk-through of the API and its bot walk-through as they are
// written: every command must succeed (a curl that gets an HTTP error fails the script), every
// status and listing the README shows must be what the server answers, and in the end the run
// the bot walk-through does by hand has succeeded with its answer in the thread. Then the Go bot
// of the README, in a module of its own that depends on a clone of the repository as the README
// says, and the reference agent each answer a mention.
func TestREADME(t *testing.T) {
	t.Parallel()
	needTools(t, "bash", "curl", "jq")
	md, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	walk := readmeSection(t, string(md), readmeWalkThrough)
	botBlocks := readmeSection(t, string(md), readmeBot)
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		srv := mustStart(t, eng)

		// A folder beside the clone (the repository under test, ../bothy) with the binary that
		// make run builds (./bothy), and the Go program saved as ../echobot/main.go.
		dir := t.TempDir()
		root, err := filepath.Abs(repoRoot)
		if err != nil {
			t.Fatal(err)
		}
		work := filepath.Join(dir, "run")
		for _, err := range []error{os.Mkdir(work, 0o755), os.Symlink(root, filepath.Join(dir, "bothy")),
			os.Symlink(binPath, filepath.Join(work, "bothy")), os.Mkdir(filepath.Join(dir, "echobot"), 0o755)} {
			if err != nil {
				t.Fatal(err)
			}
		}

		var script strings.Builder
		script.WriteString(readmeHarness)
		var ran, background []readmeBlock
		goPrograms, codes := 0, 0
		for i, b := range append(slices.Clone(walk), botBlocks...) {
			switch {
			case b.lang == "go":
				goPrograms++
				if err := os.WriteFile(filepath.Join(dir, "echobot", "main.go"), []byte(b.text), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			case b.lang != "sh":
				t.Fatalf("%s: a %q block in a walk-through; the test runs sh and go blocks", b, b.lang)
			case i == 0:
				// The server's start: the test started one. What the README shows of its output
				// must be what it prints.
				if !strings.HasPrefix(b.text, "make run\n") || !setupLine.MatchString(b.text) {
					t.Fatalf("%s: the first block should be make run and show the setup line as serve prints it:\n%s", b, b.text)
				}
				continue
			}
			text := strings.ReplaceAll(b.text, readmeOrigin, srv.public)
			if readmeCodeLine.MatchString(text) {
				codes++
				text = readmeCodeLine.ReplaceAllLiteralString(text, "CODE='"+srv.setupCode+"'")
			}
			if readmeLongRunning.MatchString(text) {
				background = append(background, readmeBlock{lang: b.lang, text: text, line: b.line})
				continue
			}
			fmt.Fprintf(&script, "printf '\\n@@block %d\\n'; printf '\\n@@block %d\\n' >&2\n%s\n", len(ran), len(ran), text)
			ran = append(ran, b)
		}
		if codes != 1 {
			t.Fatalf("the walk-through has %d lines CODE='…' to put the setup code in, want 1", codes)
		}
		if goPrograms != 1 || len(background) != 2 {
			t.Fatalf("the bot section has %d Go programs and %d blocks that start an agent, want 1 and 2 (the Go bot's, the reference agent's)",
				goPrograms, len(background))
		}
		var vars []string
		for _, b := range ran {
			for _, m := range readmeAssign.FindAllStringSubmatch(b.text, -1) {
				if !slices.Contains(vars, m[1]) {
					vars = append(vars, m[1])
				}
			}
		}
		state := filepath.Join(dir, "state.sh")
		fmt.Fprintf(&script, "printf '\\n@@end\\n'\ndeclare -p %s > %q\n", strings.Join(vars, " "), state)

		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
		cmd.Dir = work
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("the README's commands failed (%v) in the block after the last marker\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		}
		outs, statuses := blockOutputs(stdout.String()), blockOutputs(stderr.String())
		for n, b := range ran {
			var got []string
			for _, l := range statuses[n] {
				if s, ok := strings.CutPrefix(l, "@@status "); ok {
					got = append(got, s)
				}
			}
			// The statuses the block documents come in its calls in that order.
			rest := got
			for _, m := range readmeStatus.FindAllStringSubmatch(b.text, -1) {
				k := slices.Index(rest, m[1])
				if k < 0 {
					t.Errorf("%s documents status %s; its calls answered %v", b, m[1], got)
					break
				}
				rest = rest[k+1:]
			}
			if want := expectedListing(b); len(want) > 0 {
				out := outs[n]
				if len(out) != len(want) {
					t.Errorf("%s shows\n  %s\nthe commands printed\n  %s", b, strings.Join(want, "\n  "), strings.Join(out, "\n  "))
					continue
				}
				for k := range want {
					if !matchesListing(want[k], out[k]) {
						t.Errorf("%s shows %s, the commands printed %s", b, want[k], out[k])
					}
				}
			}
		}
		v := readState(t, state)

		// The run the bot walk-through did by hand: succeeded, with its output and its answer.
		owner := as(srv, v["TOKEN"])
		r := runOf(t, owner, v["RUN"])
		if r.Status != "succeeded" || r.AgentID != v["AGENT_ID"] || r.ThreadID != v["THREAD"] || r.Document.Output != "hello there" {
			t.Fatalf("the walk-through's run: %+v, want succeeded with the output hello there", r)
		}
		if reply := replyOf(t, owner, 0, v["AGENT_ID"], "hello there"); reply["run_id"] != v["RUN"] {
			t.Fatalf("the answer %v is not linked to the run %s", reply, v["RUN"])
		}
		var p struct {
			Events []event `json:"events"`
		}
		as(srv, v["AGENT_TOKEN"]).do(t, http.MethodGet, api("agents", "me", "events"), nil).want(t, http.StatusOK).decode(t, &p)
		for _, e := range p.Events {
			if e.Type == "agent.invocation" && e.Data["run_id"] == v["RUN"] {
				t.Fatalf("the acknowledged invocation comes again at seq %d", e.Seq)
			}
		}

		// The agents that run until they are stopped: the Go bot, then the reference agent.
		for i, b := range background {
			after := owner.mustHead(t)
			text := fmt.Sprintf("answer number %d", i+1)
			agent := startReadmeAgent(t, b, work, state)
			mid, trigger := postedMessage(t, owner, v["THREAD"], "@echo "+text)
			if trigger != "triggered" {
				t.Fatalf("the mention answered trigger_state %v", trigger)
			}
			reply := waitReply(t, owner, after, v["AGENT_ID"], text, agent)
			runID, _ := reply["run_id"].(string)
			waitRunState(t, owner, runID, "succeeded")
			if r := runOf(t, owner, runID); r.TriggerMessageID == nil || *r.TriggerMessageID != mid {
				t.Fatalf("%s answered in run %+v, not the run of the mention %s", b, r, mid)
			}
			agent.stop(t)
		}
	})
}

// readState reads the variables the script left, as declare -p wrote them.
func readState(t *testing.T, path string) map[string]string {
	t.Helper()
	out, err := exec.Command("bash", "-c", `source "$1"; for v in $(compgen -v); do printf '%s=%s\0' "$v" "${!v}"; done`, "bash", path).Output()
	if err != nil {
		t.Fatalf("read the walk-through's variables: %v", err)
	}
	v := map[string]string{}
	for _, kv := range strings.Split(string(out), "\x00") {
		if k, val, ok := strings.Cut(kv, "="); ok {
			v[k] = val
		}
	}
	for _, k := range []string{"TOKEN", "RUN", "AGENT_ID", "AGENT_TOKEN", "THREAD"} {
		if v[k] == "" {
			t.Fatalf("the walk-through left no %s", k)
		}
	}
	return v
}

// readmeAgent is a README block that runs an agent, in a process group of its own.
type readmeAgent struct {
	block  readmeBlock
	cmd    *exec.Cmd
	out    bytes.Buffer
	exited chan struct{}
	err    error
}

func startReadmeAgent(t *testing.T, b readmeBlock, dir, state string) *readmeAgent {
	t.Helper()
	a := &readmeAgent{block: b, exited: make(chan struct{})}
	a.cmd = exec.Command("bash", "-c", readmeHarness+"source \"$1\"\n"+b.text, "bash", state)
	a.cmd.Dir = dir
	// The Go bot is built offline: what it needs is in the module cache, from building bothy,
	// and the checksum database cannot be asked.
	a.cmd.Env = append(os.Environ(), "GOPROXY=off", "GOSUMDB=off", "GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local")
	a.cmd.Stdout, a.cmd.Stderr = &a.out, &a.out
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		a.err = a.cmd.Wait()
		close(a.exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
		<-a.exited
	})
	return a
}

// stop interrupts the agent as Ctrl-C does; it must end at once and with exit status 0.
func (a *readmeAgent) stop(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(-a.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.exited:
		if a.err != nil {
			t.Fatalf("%s ended with %v on SIGINT:\n%s", a.block, a.err, a.out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s still runs 10s after SIGINT", a.block)
	}
}

// waitReply waits for the message of agent whose content is content, logged after seq after,
// and returns its data; it gives up when agent's block ends first.
func waitReply(t *testing.T, c *client, after int64, agentID, content string, agent *readmeAgent) map[string]any {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second) // the Go bot is built first
	for {
		if m := findReply(t, c, after, agentID, content); m != nil {
			return m
		}
		select {
		case <-agent.exited:
			t.Fatalf("%s ended (%v) before it answered:\n%s", agent.block, agent.err, agent.out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer %q within 90s:\n%s", agent.block, content, agent.out.String())
		}
	}
}

// replyOf returns the message of agent whose content is content, logged after seq after.
func replyOf(t *testing.T, c *client, after int64, agentID, content string) map[string]any {
	t.Helper()
	m := findReply(t, c, after, agentID, content)
	if m == nil {
		t.Fatalf("no message %q of the agent after seq %d", content, after)
	}
	return m
}

func findReply(t *testing.T, c *client, after int64, agentID, content string) map[string]any {
	t.Helper()
	evs, _ := c.mustAllEvents(t, after)
	for _, e := range evs {
		if e.Type == "message.created" && e.Data["author_id"] == agentID && e.Data["content"] == content && e.Data["run_id"] != nil {
			return e.Data
		}
	}
	return nil
}

// waitRunState waits until the run is in state.
func waitRunState(t *testing.T, c *client, runID, state string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := runOf(t, c, runID)
		if r.Status == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run %s is %s after 10s, want %s", runID, r.Status, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
