package agentsbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	gatewaybench "bothy.dev/bothy/bench/gateway"
	httpbench "bothy.dev/bothy/bench/http"
	"bothy.dev/bothy/bench/internal/measure"
)

// run.updated is ephemeral (no seq): {"op":"event","d":{"type":"run.updated","data":{"run_id":
// "…","thread_id":"…","base_version":3,"version":5,"patch":{…},"document":null}}}, or a snapshot
// with "base_version":null and the document. A client reads the run, the base version and the
// version by their bytes (a full decode of every frame at every client would cost the load
// generator more than the server's fan-out); the version member is the first "version" key of
// data (the patch's and the document's, which follow, are the same number), base_version's key
// does not contain it.
var (
	runUpdatedPrefix = []byte(`{"op":"event","d":{"type":"run.updated","data":`)
	runIDKey         = []byte(`"run_id":"`)
	baseVersionKey   = []byte(`"base_version":`)
	versionKey       = []byte(`"version":`)
	nullValue        = []byte(`null`)
)

// runUpdate is what a client reads of a run.updated; base is -1 for a snapshot.
type runUpdate struct {
	runID         []byte
	base, version int64
}

// parseRunUpdated reads a run.updated frame; ok is false for another frame.
func parseRunUpdated(f []byte) (u runUpdate, ok bool, err error) {
	data, ok := bytes.CutPrefix(f, runUpdatedPrefix)
	if !ok {
		return runUpdate{}, false, nil
	}
	k := bytes.Index(data, runIDKey)
	if k < 0 {
		return runUpdate{}, true, fmt.Errorf("run.updated without run_id: %.300s", f)
	}
	id := data[k+len(runIDKey):]
	end := bytes.IndexByte(id, '"')
	if end <= 0 {
		return runUpdate{}, true, fmt.Errorf("run.updated with a bad run_id: %.300s", f)
	}
	u.runID = id[:end]
	k = bytes.Index(data, baseVersionKey)
	if k < 0 {
		return runUpdate{}, true, fmt.Errorf("run.updated without base_version: %.300s", f)
	}
	if rest := data[k+len(baseVersionKey):]; bytes.HasPrefix(rest, nullValue) {
		u.base = -1
	} else if u.base, ok = leadingInt(rest); !ok {
		return runUpdate{}, true, fmt.Errorf("run.updated with a bad base_version: %.300s", f)
	}
	k = bytes.Index(data, versionKey)
	if k < 0 {
		return runUpdate{}, true, fmt.Errorf("run.updated without version: %.300s", f)
	}
	if u.version, ok = leadingInt(data[k+len(versionKey):]); !ok || u.version < 1 {
		return runUpdate{}, true, fmt.Errorf("run.updated with a bad version: %.300s", f)
	}
	if u.base >= u.version {
		return runUpdate{}, true, fmt.Errorf("run.updated from base_version %d to version %d", u.base, u.version)
	}
	return u, true, nil
}

func leadingInt(b []byte) (int64, bool) {
	k := 0
	for k < len(b) && k < 18 && b[k] >= '0' && b[k] <= '9' {
		k++
	}
	if k == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b[:k]), 10, 64)
	return n, err == nil
}

// runLedger is what one client received of one run: the version it has, and when each version
// first arrived (firstAt[v], unix nanoseconds; index 0 unused).
type runLedger struct {
	have    int64
	firstAt []int64
}

// record notes a frame read at at: a patch must start at the version the client has (else
// versions were lost), a snapshot may jump; a version at or below the one held is an error.
func (l *runLedger) record(u runUpdate, at int64) error {
	if u.version <= l.have {
		return fmt.Errorf("version %d after version %d (a version twice or out of order)", u.version, l.have)
	}
	if u.base >= 0 && u.base != l.have {
		return fmt.Errorf("a patch from version %d while the client has %d: versions %d to %d never arrived", u.base, l.have, l.have+1, u.base)
	}
	if l.firstAt == nil {
		l.firstAt = make([]int64, 1, 512)
	}
	for v := l.have + 1; v <= u.version; v++ {
		l.firstAt = append(l.firstAt, at)
	}
	l.have = u.version
	return nil
}

// runIndex maps run ids to their index; the clients read it once the runs exist.
type runIndex map[string]int

// watcher is one client focused on the runs' thread.
type watcher struct {
	c       *gatewaybench.Conn
	runs    *atomic.Pointer[runIndex]
	ledgers []runLedger // by run index; written by the reader only
	frames  atomic.Int64
	have    []atomic.Int64       // by run index: the version held, for the drain
	r       *gatewaybench.Reader // runs follow
}

func (w *watcher) follow() error {
	var order gatewaybench.Order
	for {
		f, at, err := w.c.Read()
		if err != nil {
			if w.c.Closing() {
				return nil
			}
			return err
		}
		op, _ := gatewaybench.FrameOp(f)
		switch string(op) {
		case "ready":
			if err := order.Ready(); err != nil {
				return err
			}
		case "catchup.complete":
			if err := order.Complete(); err != nil {
				return err
			}
			w.r.Completed()
		case "event":
			u, isRun, err := parseRunUpdated(f)
			if err != nil {
				return err
			}
			if isRun {
				if err := w.recordRun(u, at); err != nil {
					return err
				}
				continue
			}
			e, err := gatewaybench.ParseEvent(f)
			switch {
			case err != nil:
				return err
			case e.Seq == 0:
				continue
			}
			if err := order.Event(e.Seq); err != nil {
				return err
			}
		}
	}
}

func (w *watcher) recordRun(u runUpdate, at time.Time) error {
	idx := w.runs.Load()
	if idx == nil {
		return fmt.Errorf("run.updated of run %s before any run was started", u.runID)
	}
	r, ok := (*idx)[string(u.runID)]
	if !ok {
		return fmt.Errorf("run.updated of run %s, which the benchmark did not start", u.runID)
	}
	if err := w.ledgers[r].record(u, at.UnixNano()); err != nil {
		return fmt.Errorf("run %d: %w", r, err)
	}
	w.have[r].Store(u.version)
	w.frames.Add(1)
	return nil
}

// Fanout is a run fan-out: Clients people's clients focused on Thread, the agent running Runs
// runs there at once, each patching every PatchMin to PatchMax (uniformly at random) with
// AppendBytes of output_append, for Warmup + Duration; the patches sent after the warm-up are
// measured. Background ordinary messages go into the thread at BackgroundRate a second.
type Fanout struct {
	Thread             string
	Clients            int
	ConnectParallel    int
	Runs               int
	PatchMin, PatchMax time.Duration
	AppendBytes        int
	Warmup, Duration   time.Duration
	BackgroundRate     float64
	Drain              time.Duration
	ServerCPU          gatewaybench.CPUReader
	BackgroundWorkers  int
	// TokenRate, when set, makes each run stream tokens of AppendBytes at this many a second,
	// as a model does, instead of patching every PatchMin to PatchMax: the agent sends the first
	// token at once and then each patch Coalesce after the first token it holds, with every token
	// due by then, as `bothy agent llm` does. The latency is then measured per token, from the
	// moment the model gave it.
	TokenRate float64
	Coalesce  time.Duration
}

// Fanned is what a fan-out measured.
type Fanned struct {
	// Latency is, for every measured version v of every run at every client, the first receipt
	// of a run.updated with a version ≥ v − the moment the agent sent PATCH v.
	Latency measure.Latencies
	// Patch is the agent's PATCH, from send to 200, of the measured patches.
	Patch measure.Latencies
	// Patches are the patches sent (all), Versions the measured (client, version) pairs.
	Patches, Pairs int
	// Elapsed is from the first patch to the last.
	Elapsed time.Duration
	// FramesPerPatch is the run.updated frames one client received per patch (coalescing
	// makes it below 1).
	FramesPerPatch float64
	// ServerCPU and LoadCPU are CPU time per patch, from the first patch to the last version
	// at the last client (background messages included).
	ServerCPU, LoadCPU time.Duration
	// With a TokenRate: TokenLatency is, for every measured token at every client, the first
	// receipt of a version holding it − the moment the model gave it; Tokens the tokens sent
	// (all) and ServerCPUPerToken the server's CPU time per token.
	TokenLatency      measure.Latencies
	Tokens            int
	ServerCPUPerToken time.Duration
}

// RunFanout connects and focuses the clients, makes the runs by mentioning the agent (who gets
// each invocation on its consumer and starts the run), patches them, and checks that every
// client got every version of every run, in order, once.
func RunFanout(ctx context.Context, c *http.Client, in gatewaybench.Instance, a Agent, cfg Fanout) (Fanned, error) {
	if cfg.Runs < 1 || cfg.Clients < 1 || cfg.PatchMin <= 0 || cfg.PatchMax < cfg.PatchMin || cfg.Duration <= 0 {
		return Fanned{}, errors.New("agentsbench: a fan-out needs runs, clients, a patch interval and a duration")
	}
	if cfg.TokenRate < 0 || (cfg.TokenRate > 0 && cfg.Coalesce < 0) {
		return Fanned{}, errors.New("agentsbench: a token stream needs a positive rate and a coalescing interval of 0 or more")
	}
	var (
		mu   sync.Mutex
		invs = map[string]invocation{} // by message id
	)
	k, err := connectConsumer(ctx, in.Base, a.Token, func(inv invocation) error {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := invs[inv.MessageID]; ok {
			return fmt.Errorf("message %s invoked the agent twice", inv.MessageID)
		}
		invs[inv.MessageID] = inv
		return nil
	})
	if err != nil {
		return Fanned{}, err
	}
	var runs atomic.Pointer[runIndex]
	ws, err := focusClients(ctx, in, cfg, &runs)
	if err != nil {
		return Fanned{}, errors.Join(fmt.Errorf("connect: %w", err), k.stop())
	}
	stopAll := func() error {
		errs := []error{k.stop()}
		for i, w := range ws {
			w.c.Close()
			if err := w.r.Wait(); err != nil {
				errs = append(errs, fmt.Errorf("client %d: %w", i, err))
			}
		}
		return errors.Join(errs...)
	}
	ag, err := startRuns(ctx, c, in, a, cfg, k, &mu, invs)
	if err != nil {
		return Fanned{}, errors.Join(err, stopAll())
	}
	idx := runIndex{}
	for r, run := range ag {
		idx[run.id] = r
	}
	runs.Store(&idx)

	var bg *poster
	var bgPlan gatewaybench.Plan
	if cfg.BackgroundRate > 0 {
		if bgPlan, err = gatewaybench.NewPlan(cfg.BackgroundRate, 0, cfg.Warmup+cfg.Duration); err == nil {
			bg, err = newPoster(c, in.Base, []string{cfg.Thread}, in.Tokens, "", 0, bgPlan.Total)
		}
		if err != nil {
			return Fanned{}, errors.Join(err, stopAll())
		}
	}
	cpu0, err := readCPU(cfg.ServerCPU)
	own0 := measure.CPUTime()
	start := time.Now()
	measureFrom := start.Add(cfg.Warmup)
	end := measureFrom.Add(cfg.Duration)
	var wg sync.WaitGroup
	errs := make([]error, len(ag)+1)
	if err == nil {
		for r, run := range ag {
			if cfg.TokenRate > 0 {
				wg.Go(func() { errs[r] = run.streamUntil(ctx, c, in.Base, a.Token, cfg, start, end) })
				continue
			}
			wg.Go(func() { errs[r] = run.patchUntil(ctx, c, in.Base, a.Token, cfg, start, end) })
		}
		if bg != nil {
			wg.Go(func() { _, errs[len(ag)] = offer(ctx, bg, bgPlan, max(1, cfg.BackgroundWorkers)) })
		}
		wg.Wait()
		err = errors.Join(errs...)
	}
	last := time.Now()
	if err == nil {
		err = waitFor(ctx, cfg.Drain, func() error {
			for i, w := range ws {
				if err := w.r.Failed(); err != nil {
					return fmt.Errorf("client %d: %w", i, err)
				}
			}
			return k.failed()
		}, func() (bool, string) {
			for i, w := range ws {
				for r, run := range ag {
					if h := w.have[r].Load(); h < run.version {
						return false, fmt.Sprintf("client %d has version %d of run %d, the agent sent %d", i, h, r, run.version)
					}
				}
			}
			return true, ""
		})
	}
	cpu1, cpuErr := readCPU(cfg.ServerCPU)
	own1 := measure.CPUTime()
	if err = errors.Join(err, cpuErr, stopAll()); err != nil {
		return Fanned{}, err
	}
	out := Fanned{Elapsed: last.Sub(start)}
	var lat, patch, tokLat []time.Duration
	frames := int64(0)
	var gap time.Duration
	if cfg.TokenRate > 0 {
		gap = time.Duration(float64(time.Second) / cfg.TokenRate)
	}
	for _, run := range ag {
		out.Patches += int(run.version)
		for _, n := range run.tokens {
			out.Tokens += int(n)
		}
		for v := 1; v <= int(run.version); v++ {
			if run.sentAt[v] >= measureFrom.UnixNano() {
				patch = append(patch, run.took[v])
			}
		}
	}
	for i, w := range ws {
		frames += w.frames.Load()
		for r, run := range ag {
			l := w.ledgers[r]
			if l.have != run.version {
				return Fanned{}, fmt.Errorf("client %d: version %d of run %d, the agent sent %d", i, l.have, r, run.version)
			}
			for v := 1; v <= int(run.version); v++ {
				if run.sentAt[v] < measureFrom.UnixNano() {
					continue
				}
				d := time.Duration(l.firstAt[v] - run.sentAt[v])
				if d < 0 {
					return Fanned{}, fmt.Errorf("client %d got version %d of run %d before the agent sent it", i, v, r)
				}
				lat = append(lat, d)
				if cfg.TokenRate > 0 {
					// The tokens of version v were given one gap apart from its first.
					for j := range int64(run.tokens[v]) {
						tokLat = append(tokLat, time.Duration(l.firstAt[v]-run.firstToken[v]-j*int64(gap)))
					}
				}
			}
		}
	}
	if len(lat) == 0 {
		return Fanned{}, errors.New("agentsbench: no patch was measured")
	}
	out.Pairs = len(lat)
	out.Latency, out.Patch = measure.Summarise(lat), measure.Summarise(patch)
	out.FramesPerPatch = float64(frames) / float64(len(ws)) / float64(out.Patches)
	out.ServerCPU = (cpu1 - cpu0) / time.Duration(out.Patches)
	out.LoadCPU = (own1 - own0) / time.Duration(out.Patches)
	if cfg.TokenRate > 0 {
		out.TokenLatency = measure.Summarise(tokLat)
		out.ServerCPUPerToken = (cpu1 - cpu0) / time.Duration(max(1, out.Tokens))
	}
	return out, nil
}

// focusClients connects cfg.Clients clients, client k as person k mod people, at most
// ConnectParallel at a time, and focuses each on the thread once caught up.
func focusClients(ctx context.Context, in gatewaybench.Instance, cfg Fanout, runs *atomic.Pointer[runIndex]) ([]*watcher, error) {
	if len(in.Tokens) == 0 {
		return nil, errors.New("agentsbench: nobody to connect as")
	}
	focus, err := json.Marshal(map[string]any{"op": "focus", "d": map[string]string{"thread_id": cfg.Thread}})
	if err != nil {
		return nil, err
	}
	ws := make([]*watcher, cfg.Clients)
	errs := make([]error, cfg.Clients)
	sem := make(chan struct{}, max(1, cfg.ConnectParallel))
	var wg sync.WaitGroup
	for i := range ws {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ws[i], errs[i] = focusOne(ctx, in.Base, in.Tokens[i%len(in.Tokens)], focus, cfg.Runs, runs)
		})
	}
	wg.Wait()
	var failed []error
	for i, err := range errs {
		if err != nil {
			failed = append(failed, fmt.Errorf("client %d: %w", i, err))
		}
	}
	if len(failed) > 0 {
		for _, w := range ws {
			if w != nil {
				w.c.Abort()
			}
		}
		return nil, errors.Join(failed...)
	}
	return ws, nil
}

func focusOne(ctx context.Context, base, token string, focus []byte, nRuns int, runs *atomic.Pointer[runIndex]) (*watcher, error) {
	conn, err := gatewaybench.Dial(ctx, base)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Identify(token, -1); err != nil {
		conn.Abort()
		return nil, err
	}
	w := &watcher{c: conn, runs: runs, ledgers: make([]runLedger, nRuns), have: make([]atomic.Int64, nRuns),
		r: gatewaybench.NewReader()}
	w.r.Start(w.follow)
	if err := w.r.WaitComplete(ctx); err != nil {
		conn.Abort()
		return nil, err
	}
	if err := conn.Send(focus); err != nil {
		conn.Abort()
		return nil, fmt.Errorf("focus: %w", err)
	}
	return w, nil
}

// agentRun is one run the agent patches: its id and invocation token, and per version when its
// PATCH was sent (unix nanoseconds) and how long it took to its 200.
type agentRun struct {
	id, token string
	version   int64
	sentAt    []int64
	took      []time.Duration
	// With a token stream, per version: when the model gave its first token (unix
	// nanoseconds) and how many tokens it carries.
	firstToken []int64
	tokens     []int32
}

// startRuns posts one message mentioning the agent per run into the thread (as the people in
// turn), waits for each invocation on the agent's consumer and starts the run.
func startRuns(ctx context.Context, c *http.Client, in gatewaybench.Instance, a Agent, cfg Fanout, k *consumer, mu *sync.Mutex, invs map[string]invocation) ([]*agentRun, error) {
	p, err := newPoster(c, in.Base, []string{cfg.Thread}, in.Tokens, a.Handle, 1, cfg.Runs)
	if err != nil {
		return nil, err
	}
	for i := range cfg.Runs {
		if err := p.post(ctx, i); err != nil {
			return nil, fmt.Errorf("the message of run %d: %w", i, err)
		}
	}
	if err := waitFor(ctx, 10*time.Second, k.failed, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(invs) >= cfg.Runs, fmt.Sprintf("the agent received %d of %d invocations", len(invs), cfg.Runs)
	}); err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	out := make([]*agentRun, cfg.Runs)
	for i, id := range p.ids {
		inv, ok := invs[id]
		if !ok {
			return nil, fmt.Errorf("no invocation for the message of run %d", i)
		}
		if inv.ThreadID != cfg.Thread {
			return nil, fmt.Errorf("run %d is in thread %s, not %s", i, inv.ThreadID, cfg.Thread)
		}
		out[i] = &agentRun{id: inv.RunID, token: inv.Token, sentAt: make([]int64, 1, 1024), took: make([]time.Duration, 1, 1024),
			firstToken: make([]int64, 1, 1024), tokens: make([]int32, 1, 1024)}
		if err := agentCall(ctx, c, http.MethodPost, in.Base+"/api/v1/runs/"+inv.RunID+"/start", a.Token, inv.Token, nil); err != nil {
			return nil, fmt.Errorf("start run %d: %w", i, err)
		}
	}
	return out, nil
}

// patchUntil patches the run until end: version 1 at start plus a random part of the interval,
// each next one an interval (PatchMin to PatchMax) after the one before was due, or at once when
// the one before was answered later than that (a version needs the one before it stored).
func (r *agentRun) patchUntil(ctx context.Context, c *http.Client, base, token string, cfg Fanout, start, end time.Time) error {
	interval := func() time.Duration {
		return cfg.PatchMin + time.Duration(rand.Int64N(int64(cfg.PatchMax-cfg.PatchMin)+1))
	}
	url := base + "/api/v1/runs/" + r.id
	appendText := bytes.Repeat([]byte("x"), max(0, cfg.AppendBytes-1))
	due := start.Add(time.Duration(rand.Int64N(int64(cfg.PatchMax))))
	for due.Before(end) {
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		v := r.version + 1
		body := fmt.Appendf(nil, `{"version":%d,"output_append":"%s "}`, v, appendText)
		sent := time.Now()
		if err := agentCall(ctx, c, http.MethodPatch, url, token, r.token, body); err != nil {
			return fmt.Errorf("patch version %d of run %s: %w", v, r.id, err)
		}
		r.sentAt = append(r.sentAt, sent.UnixNano())
		r.took = append(r.took, time.Since(sent))
		r.version = v
		due = due.Add(interval())
		if now := time.Now(); due.Before(now) {
			due = now
		}
	}
	return nil
}

// streamUntil streams tokens into the run until end: token k is given by the model at a random
// offset plus k/TokenRate; the first token is sent at once, every later patch Coalesce after the
// first token it holds, carrying every token given by the time it is sent (more when the patch
// before it took long). Each token is AppendBytes of output_append.
func (r *agentRun) streamUntil(ctx context.Context, c *http.Client, base, token string, cfg Fanout, start, end time.Time) error {
	url := base + "/api/v1/runs/" + r.id
	gap := time.Duration(float64(time.Second) / cfg.TokenRate)
	t0 := start.Add(time.Duration(rand.Int64N(int64(gap))))
	word := bytes.Repeat([]byte("x"), max(0, cfg.AppendBytes-1))
	var text []byte
	for k := int64(0); ; {
		first := t0.Add(time.Duration(k) * gap)
		if !first.Before(end) {
			return nil
		}
		flush := first
		if k > 0 {
			flush = first.Add(cfg.Coalesce)
		}
		if d := time.Until(flush); d > 0 {
			time.Sleep(d)
		}
		now := time.Now()
		n := max(1, int64(now.Sub(first)/gap)+1)
		text = text[:0]
		for range n {
			text = append(append(text, word...), ' ')
		}
		v := r.version + 1
		body := fmt.Appendf(nil, `{"version":%d,"output_append":"%s"}`, v, text)
		if err := agentCall(ctx, c, http.MethodPatch, url, token, r.token, body); err != nil {
			return fmt.Errorf("patch version %d of run %s: %w", v, r.id, err)
		}
		r.sentAt = append(r.sentAt, now.UnixNano())
		r.took = append(r.took, time.Since(now))
		r.firstToken = append(r.firstToken, first.UnixNano())
		r.tokens = append(r.tokens, int32(n))
		r.version = v
		k += n
	}
}

// agentCall sends one of the agent's run calls with its API token and the run's invocation
// token; any answer but 200 is an error.
func agentCall(ctx context.Context, c *http.Client, method, url, token, invocationToken string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Invocation-Token", invocationToken)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %d %s", method, resp.StatusCode, httpbench.Snippet(b))
	}
	return nil
}
