// Package httpbench is the load generator of the HTTP benchmarks. It prepares a running bothy
// over its REST API (the owner, people, a space, channels, post grants, sessions) and creates
// messages in it with POST /api/v1/threads/{id}/messages: closed loop (clients posting back to
// back, for throughput) or open loop (at a fixed rate, each request timed from the moment it was
// due, so that a stalled server cannot slow the generator down and hide its own stall).
//
// It talks to the server only through HTTP, like any client, from its own process (bothybench;
// the server is a `bothy serve` started by bench/serve). It must not import the appliance. Every
// message create answered otherwise than 201 Created, and every transport error, ends the run
// with an error: no figure is made of failed (or merely repeated) requests.
package httpbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"bothy.dev/bothy/bench/internal/fixture"
	"bothy.dev/bothy/bench/internal/measure"
)

// Target is a prepared instance: where to post and as whom.
type Target struct {
	// Base is the public origin, such as http://127.0.0.1:41234.
	Base string
	// Tokens are session tokens of people allowed to post in every thread of Threads.
	Tokens []string
	// Threads are the main threads of the channels.
	Threads []string
}

// Client returns an HTTP client for up to conns concurrent keep-alive connections to one host.
func Client(conns int) *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			IdleConnTimeout:     time.Minute,
			DisableCompression:  true,
		},
	}
}

// Password is the password of every account Prepare creates.
const Password = "bench horse battery staple"

// Prepare redeems the setup code for an owner, creates a space with channels (each with its main
// thread) and people (each granted post on every channel), and logs the people in. With
// people = 0 the owner posts.
func Prepare(ctx context.Context, c *http.Client, base, setupCode string, people, channels int) (Target, error) {
	t := Target{Base: base}
	call := func(token, path string, in, out any) error { return Call(ctx, c, base, token, path, in, out) }
	var ids struct {
		ID           string `json:"id"`
		MainThreadID string `json:"main_thread_id"`
		Token        string `json:"token"`
	}
	if err := call("", "/api/v1/setup", map[string]string{"code": setupCode, "handle": "owner", "display_name": "Owner", "password": Password}, nil); err != nil {
		return t, err
	}
	login := func(handle string) (string, error) {
		if err := call("", "/api/v1/auth/login", map[string]string{"handle": handle, "password": Password}, &ids); err != nil {
			return "", err
		}
		return ids.Token, nil
	}
	owner, err := login("owner")
	if err != nil {
		return t, err
	}
	if err := call(owner, "/api/v1/spaces", map[string]string{"name": "Bench"}, &ids); err != nil {
		return t, err
	}
	space := ids.ID
	var channelIDs []string
	for i := range max(1, channels) {
		if err := call(owner, "/api/v1/spaces/"+space+"/channels", map[string]string{"name": fmt.Sprintf("bench-%d", i)}, &ids); err != nil {
			return t, err
		}
		channelIDs = append(channelIDs, ids.ID)
		t.Threads = append(t.Threads, ids.MainThreadID)
	}
	for i := range people {
		handle := fmt.Sprintf("person%d", i)
		if err := call(owner, "/api/v1/users", map[string]string{"handle": handle, "display_name": "Person " + strconv.Itoa(i), "password": Password}, &ids); err != nil {
			return t, err
		}
		person := ids.ID
		for _, ch := range channelIDs {
			if err := call(owner, "/api/v1/channels/"+ch+"/grants", map[string]string{"principal_id": person, "level": "post"}, nil); err != nil {
				return t, err
			}
		}
		token, err := login(handle)
		if err != nil {
			return t, err
		}
		t.Tokens = append(t.Tokens, token)
	}
	if people == 0 {
		t.Tokens = []string{owner}
	}
	return t, nil
}

// Call POSTs in as JSON to base+path as token's bearer (none when empty) and decodes a 2xx
// answer into out (when not nil); any other answer is an error quoting the start of its body.
func Call(ctx context.Context, c *http.Client, base, token, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return call(ctx, c, http.MethodPost, base, token, path, b, out)
}

// Get GETs base+path as token's bearer and decodes a 2xx answer into out, as Call does.
func Get(ctx context.Context, c *http.Client, base, token, path string, out any) error {
	return call(ctx, c, http.MethodGet, base, token, path, nil, out)
}

// GetBody GETs path as Get does and returns the answer's body unread, so that a latency measured
// around it ends at the last byte and leaves the client's decoding out.
func GetBody(ctx context.Context, c *http.Client, base, token, path string) ([]byte, error) {
	return roundTrip(ctx, c, http.MethodGet, base, token, path, nil)
}

func call(ctx context.Context, c *http.Client, method, base, token, path string, in []byte, out any) error {
	b, err := roundTrip(ctx, c, method, base, token, path, in)
	if err != nil {
		return err
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return nil
}

// roundTrip sends one request and returns the body of a 2xx answer.
func roundTrip(ctx context.Context, c *http.Client, method, base, token, path string, in []byte) ([]byte, error) {
	var body io.Reader
	if in != nil {
		body = bytes.NewReader(in)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, Snippet(b))
	}
	return b, nil
}

// Snippet is the start of an answer's body for an error message.
func Snippet(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// content is fixture.Content as a JSON string, the body every benchmark writes.
var content = func() []byte {
	b, err := json.Marshal(fixture.Content)
	if err != nil {
		panic(err)
	}
	return b
}()

// poster creates messages on a Target. Request k of client w posts as Tokens[w] into
// Threads[(w+k)], both modulo their length, with client_msg_id "<run>-<w>-<k>" (run is unique
// to the poster), so every request creates a new message (201) and the load spreads over people
// and threads.
type poster struct {
	c      *http.Client
	t      Target
	urls   []string
	tokens []string
	run    []byte
}

func newPoster(c *http.Client, t Target) (*poster, error) {
	if len(t.Tokens) == 0 || len(t.Threads) == 0 {
		return nil, errors.New("httpbench: the target has no token or no thread")
	}
	p := &poster{c: c, t: t, run: strconv.AppendInt([]byte("bench-"), time.Now().UnixNano(), 36)}
	for _, th := range t.Threads {
		p.urls = append(p.urls, t.Base+"/api/v1/threads/"+th+"/messages")
	}
	for _, tok := range t.Tokens {
		p.tokens = append(p.tokens, "Bearer "+tok)
	}
	return p, nil
}

// post creates message k of client w and returns an error unless the answer is 201 Created.
// buf is the client's own buffer for the body.
func (p *poster) post(ctx context.Context, w, k int, buf *[]byte) error {
	b := append((*buf)[:0], `{"content":`...)
	b = append(b, content...)
	b = append(b, `,"client_msg_id":"`...)
	b = append(b, p.run...)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(w), 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(k), 10)
	b = append(b, `"}`...)
	*buf = b
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.urls[(w+k)%len(p.urls)], bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", p.tokens[w%len(p.tokens)])
	resp, err := p.c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// 201 only: a 200 would be the stored answer to a repeated client_msg_id, no new message.
	if resp.StatusCode != http.StatusCreated {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("message create: %d %s", resp.StatusCode, Snippet(body))
	}
	// Read the body to its end so that the connection goes back to the pool.
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// CPUReader reads a process's CPU time (bench/serve's Server.CPU), so that a run can report the
// server's CPU per message. Nil reads nothing.
type CPUReader func() (time.Duration, error)

// CPUReaders are what a run reads at the start and the end of its window: the bothy server, and
// the database server behind it when it has one (PostgreSQL: pgcluster.Cluster.CPU). Either may
// be nil.
type CPUReaders struct {
	Server, DB CPUReader
}

// Result is what one load run saw in its measured window (after the warm-up).
type Result struct {
	// Ops is the messages created (2xx) in the window: completed in it for the closed loop, due
	// in it for the open loop.
	Ops int64
	// Elapsed is the length of the window.
	Elapsed   time.Duration
	Latencies measure.Latencies
	// ServerCPU is the server's CPU time in the window; LoadCPU the generator's own; DBCPU the
	// database server's, when CPUReaders.DB was given.
	ServerCPU, LoadCPU, DBCPU time.Duration
}

// PerSecond is messages per second.
func (r Result) PerSecond() float64 { return float64(r.Ops) / r.Elapsed.Seconds() }

// ServerCPUPerOp and LoadCPUPerOp are CPU time per message in microseconds.
func (r Result) ServerCPUPerOp() float64 { return perOp(r.ServerCPU, r.Ops) }

// LoadCPUPerOp is the generator's CPU time per message in microseconds.
func (r Result) LoadCPUPerOp() float64 { return perOp(r.LoadCPU, r.Ops) }

// DBCPUPerOp is the database server's CPU time per message in microseconds.
func (r Result) DBCPUPerOp() float64 { return perOp(r.DBCPU, r.Ops) }

func perOp(d time.Duration, n int64) float64 {
	if n == 0 {
		return 0
	}
	return float64(d) / float64(n) / float64(time.Microsecond)
}

// window takes the CPU readings at the start and the end of the measured window. from and to
// do not change once the run has begun.
type window struct {
	from, to                  time.Time
	cpu                       CPUReaders
	serverCPU, loadCPU, dbCPU time.Duration
	err                       error
}

// run sleeps until from, reads, sleeps until to, reads. It gives up when ctx ends.
func (w *window) run(ctx context.Context) {
	readOne := func(r CPUReader) time.Duration {
		if r == nil {
			return 0
		}
		d, err := r()
		if err != nil && w.err == nil {
			w.err = err
		}
		return d
	}
	read := func() (time.Duration, time.Duration, time.Duration) {
		return readOne(w.cpu.Server), measure.CPUTime(), readOne(w.cpu.DB)
	}
	if !sleepUntil(ctx, w.from) {
		return
	}
	s0, l0, d0 := read()
	if !sleepUntil(ctx, w.to) {
		return
	}
	s1, l1, d1 := read()
	w.serverCPU, w.loadCPU, w.dbCPU = s1-s0, l1-l0, d1-d0
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// firstError keeps the first error of many goroutines and cancels the run.
type firstError struct {
	once   sync.Once
	err    error
	cancel context.CancelFunc
}

func (f *firstError) set(err error) {
	f.once.Do(func() { f.err = err; f.cancel() })
}

// MaxMessages bounds every run: a generator that went wrong stops at this count.
const MaxMessages = 1_000_000

// Closed runs clients that each post back to back for warmup + dur on one keep-alive
// connection each, and reports what completed within the last dur. No client starts a request
// after the window; the run ends when the last one is answered.
func Closed(ctx context.Context, c *http.Client, t Target, clients int, warmup, dur time.Duration, cpu CPUReaders) (Result, error) {
	p, err := newPoster(c, t)
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, warmup+dur+time.Minute)
	defer cancel()
	fail := &firstError{cancel: cancel}
	start := time.Now()
	win := &window{from: start.Add(warmup), to: start.Add(warmup + dur), cpu: cpu}
	var total atomic.Int64
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	var winDone sync.WaitGroup
	winDone.Add(1)
	go func() { defer winDone.Done(); win.run(ctx) }()
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for k := 0; ctx.Err() == nil; k++ {
				sent := time.Now()
				if !sent.Before(win.to) || total.Add(1) > MaxMessages {
					return
				}
				if err := p.post(ctx, w, k, &buf); err != nil {
					fail.set(err)
					return
				}
				if done := time.Now(); !done.Before(win.from) && done.Before(win.to) {
					lat[w] = append(lat[w], done.Sub(sent))
				}
			}
		}()
	}
	wg.Wait()
	winDone.Wait()
	if fail.err != nil {
		return Result{}, fail.err
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if win.err != nil {
		return Result{}, win.err
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	return Result{
		Ops:       int64(len(all)),
		Elapsed:   win.to.Sub(win.from),
		Latencies: measure.Summarise(all),
		ServerCPU: win.serverCPU,
		LoadCPU:   win.loadCPU,
		DBCPU:     win.dbCPU,
	}, nil
}

// Open offers rate messages per second for warmup + dur whatever the server does: request i is
// due at start + i/rate; a dispatcher hands it to the first free one of workers clients at that
// moment (it waits in a queue when all are busy), and its latency runs from the moment it was
// due to its answer. Requests due within the last dur are reported.
func Open(ctx context.Context, c *http.Client, t Target, rate float64, workers int, warmup, dur time.Duration, cpu CPUReaders) (Result, error) {
	p, err := newPoster(c, t)
	if err != nil {
		return Result{}, err
	}
	if rate <= 0 || workers < 1 {
		return Result{}, errors.New("httpbench: the rate and the workers must be positive")
	}
	interval := time.Duration(float64(time.Second) / rate)
	total := int((warmup + dur) / interval)
	if total > MaxMessages {
		return Result{}, fmt.Errorf("httpbench: %d messages is more than the bound of %d", total, MaxMessages)
	}
	ctx, cancel := context.WithTimeout(ctx, warmup+dur+time.Minute)
	defer cancel()
	fail := &firstError{cancel: cancel}
	type job struct {
		i   int
		due time.Time
	}
	jobs := make(chan job, total)
	lat := make([]time.Duration, total)
	measured := make([]bool, total)
	start := time.Now()
	win := &window{from: start.Add(warmup), to: start.Add(warmup + dur), cpu: cpu}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for j := range jobs {
				if ctx.Err() != nil {
					continue
				}
				if err := p.post(ctx, w, j.i, &buf); err != nil {
					fail.set(err)
					continue
				}
				lat[j.i] = time.Since(j.due)
			}
		}()
	}
	var winDone sync.WaitGroup
	winDone.Add(1)
	go func() { defer winDone.Done(); win.run(ctx) }()
	from := start.Add(warmup)
	for i := 0; i < total && ctx.Err() == nil; i++ {
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		measured[i] = !due.Before(from)
		jobs <- job{i, due}
	}
	close(jobs)
	wg.Wait()
	winDone.Wait()
	if fail.err != nil {
		return Result{}, fail.err
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if win.err != nil {
		return Result{}, win.err
	}
	var all []time.Duration
	for i, m := range measured {
		if m {
			all = append(all, lat[i])
		}
	}
	return Result{
		Ops:       int64(len(all)),
		Elapsed:   dur,
		Latencies: measure.Summarise(all),
		ServerCPU: win.serverCPU,
		LoadCPU:   win.loadCPU,
		DBCPU:     win.dbCPU,
	}, nil
}

// Seed creates n messages with 8 clients, for a data directory that holds some.
func Seed(ctx context.Context, c *http.Client, t Target, n int) error {
	p, err := newPoster(c, t)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fail := &firstError{cancel: cancel}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for k := int(next.Add(1)); k <= n && ctx.Err() == nil; k = int(next.Add(1)) {
				if err := p.post(ctx, w, k, &buf); err != nil {
					fail.set(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return fail.err
}

// PostCreated POSTs body as JSON to url as token's bearer and returns an error quoting the
// start of the answer unless it is 201 Created.
func PostCreated(ctx context.Context, c *http.Client, url, token string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("%s: %d %s", url, resp.StatusCode, Snippet(b))
	}
	return nil
}
